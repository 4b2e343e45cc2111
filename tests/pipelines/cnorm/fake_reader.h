// The C-NORM unit tests' reader: the shared FakeReader (tests/support/fake_reader.h), one token
// per prompt byte plus BOS, attention rows and generations given by the test.
#pragma once
#include "support/fake_reader.h"

namespace ragform::cnorm::testing {

using FakeReader = ::ragform::testing::FakeReader;

}  // namespace ragform::cnorm::testing
