#include "lib/model/recompute.hpp"

namespace eth {

std::string to_string(Recompute mode) {
  switch (mode) {
    case Recompute::none: return "none";
    case Recompute::selective: return "selective";
    case Recompute::full: return "full";
  }
  return "?";
}

std::optional<Recompute> parse_recompute(const std::string& text) {
  for (Recompute mode : {Recompute::none, Recompute::selective, Recompute::full})
    if (text == to_string(mode)) return mode;
  return std::nullopt;
}

}  // namespace eth
