// Command-line parsing shared by the programs and benchmarks: Boost.Program_options, with every
// mistake turned into one InputError line that points at --help.
#pragma once

#include <boost/program_options.hpp>

namespace eth {

// Parses into the variables `desc` binds. Returns false for --help, after printing it when
// `print_help` (under MPI, rank 0 alone prints).
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& desc,
                        bool print_help = true);

}  // namespace eth
