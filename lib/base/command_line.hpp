// Command-line parsing shared by the programs and benchmarks: Boost.Program_options, with every
// mistake turned into one InputError line that points at --help.
#pragma once

#include <boost/program_options.hpp>

namespace eth {

// Parses into the variables `desc` binds (with `positional` naming the options that bare
// arguments fill, if any). Returns false for --help, after printing it when `print_help` (under
// MPI, rank 0 alone prints).
bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& desc,
                        bool print_help = true,
                        const boost::program_options::positional_options_description* positional = nullptr);

}  // namespace eth
