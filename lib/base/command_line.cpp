#include "lib/base/command_line.hpp"

#include <iostream>
#include <string>

#include "lib/base/input_error.hpp"

namespace eth {

bool parse_command_line(int argc, char** argv, const boost::program_options::options_description& desc,
                        bool print_help, const boost::program_options::positional_options_description* positional) {
  namespace po = boost::program_options;
  po::variables_map vm;
  try {
    po::command_line_parser parser(argc, argv);
    parser.options(desc);
    if (positional) parser.positional(*positional);
    po::store(parser.run(), vm);
    if (vm.count("help")) {
      if (print_help) std::cout << desc << '\n';
      return false;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(std::string("command line: ") + e.what() + " (see --help)");
  }
  return true;
}

}  // namespace eth
