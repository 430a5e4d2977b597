// kturnctl: the kturn command line (DESIGN.md §1). Subcommands: render.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cli/render_command.h"

int main(int argc, char** argv) {
  CLI::App app{"kturnctl: offline tools for kturn, the Kubernetes-native TURN gateway"};
  app.require_subcommand(1);
  kturn::cli::RenderCommand render;
  CLI::App* renderCmd = kturn::cli::addRenderCommand(app, render);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // --help is success; every other parse failure is a usage error (exit 2, as documented).
    return code == 0 ? 0 : kturn::cli::kRenderUsage;
  }
  if (renderCmd->parsed()) return kturn::cli::runRender(render, std::cout, std::cerr);
  return kturn::cli::kRenderUsage;
}
