// kturn-config-reference [FILE]: writes the dataplane config reference (docs/config-reference.md)
// rendered from the config schema to FILE, or to stdout. `make config-reference` runs it on
// docs/config-reference.md.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string_view>

#include "config/config_reference.h"
#include "config/schema.h"

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && std::string_view(argv[1]).starts_with("-"))) {
    std::fprintf(stderr, "usage: kturn-config-reference [FILE]\n");
    return 2;
  }
  const std::string text = kturn::config::renderConfigReference(kturn::config::configSchema());
  if (argc == 1) {
    std::cout << text;
    return std::cout ? 0 : 1;
  }
  std::ofstream out(argv[1], std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    std::fprintf(stderr, "kturn-config-reference: cannot write %s\n", argv[1]);
    return 1;
  }
  return 0;
}
