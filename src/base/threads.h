// The one bound on a thread count a user may ask for, shared by every front end (the CLI's
// --threads, the Python constructors' threads=): 4 x the logical cores of this machine. More
// threads than that only add context switches, and each one is a thread the process limit must
// allow — a pool of 100000 would start tens of thousands of threads before failing.
#pragma once

namespace ragform {

int max_threads();

}  // namespace ragform
