// The one check of a generation's declared options (generate_options.h) that every front end
// applies to what its user gave: `ragform generate`'s flags, Python's Reader.generate keywords.
// The ranges are the declaration's (the engine's: a temperature above 100 is taken for a typing
// error, an empty nucleus holds no token); the server keeps the OpenAI API's narrower ones on its
// JSON fields.
#pragma once
#include "reader/generate_options.h"
#include "reader/reader.h"

namespace ragform::reader {

// The reader's settings for `o`, checked: OptionError naming the key for the first option out of
// its declared range (in declaration order; NaN is out of every range), top_p 0 (an empty
// nucleus) or stop strings that stop_strings_problem refuses ("stop: ...").
GenerateParams generate_params(GenerateRequest o);

// stop_after_line for a reader that cannot stop while decoding (a remote server, a Python
// reader): with p.stop_after_line, cuts g's text at runtime::line_stop_at (the first newline
// after text) and makes its finish_reason "stop"; otherwise leaves g alone.
void cut_after_line(Generation& g, const GenerateParams& p);

}  // namespace ragform::reader
