// kturnctl: the kturn command line (docs/kturnctl.md). Subcommands: render,
// config, status, auth, turncat, icetest.
#include <signal.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

#include "cli/auth_command.h"
#include "cli/config_command.h"
#include "cli/exit_codes.h"
#include "cli/icetest_command.h"
#include "cli/render_command.h"
#include "cli/status_command.h"
#include "cli/stop_latch.h"
#include "cli/turncat_command.h"
#include "common/log.h"
#include "common/signals.h"

namespace {

// Trips `latch` on the first SIGINT or SIGTERM. The signals are blocked here, before the CDS
// client's thread starts (it inherits the mask), and taken by a thread of their own. Only for
// commands that run until stopped and then clean up (a watch, a tunnel, a probe releasing its
// allocation): a one-shot command keeps the default action, so Ctrl-C ends it at once.
void stopOnSignals(kturn::cli::StopLatch& latch) {
  const sigset_t set = kturn::signals::blockTermination();
  std::thread([set, &latch] {
    int signal_number = 0;
    sigwait(&set, &signal_number);
    latch.requestStop();
  }).detach();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"kturnctl: command line tools for kturn, the Kubernetes-native TURN gateway"};
  app.require_subcommand(1);
  kturn::cli::RenderCommand render;
  kturn::cli::ConfigCommand config;
  kturn::cli::StatusCommand status;
  kturn::cli::AuthCommand auth;
  kturn::cli::TurncatCommand turncat;
  kturn::cli::IcetestCommand icetest;
  CLI::App* renderCmd = kturn::cli::addRenderCommand(app, render);
  CLI::App* configCmd = kturn::cli::addConfigCommand(app, config);
  CLI::App* statusCmd = kturn::cli::addStatusCommand(app, status);
  CLI::App* authCmd = kturn::cli::addAuthCommand(app, auth);
  CLI::App* turncatCmd = kturn::cli::addTurncatCommand(app, turncat);
  CLI::App* icetestCmd = kturn::cli::addIcetestCommand(app, icetest);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // --help is success; every other parse failure is a usage error (exit 2, as documented).
    return code == 0 ? kturn::cli::kExitOk : kturn::cli::kExitUsage;
  }
  // The libraries underneath log through spdlog; whatever they would say reaches the user as the
  // command's own error message, so their log lines stay off (and off stdout, which is output).
  kturn::log::setup(kturn::log::Format::kText, stderr);
  (void)kturn::log::configure("all:DISABLE");

  if (renderCmd->parsed()) return kturn::cli::runRender(render, std::cout, std::cerr);
  // Static: the signal thread may still hold it while the process exits.
  static kturn::cli::StopLatch stop;
  if (configCmd->parsed()) {
    if (config.watch) stopOnSignals(stop);
    return kturn::cli::runConfig(config, std::cout, std::cerr, &stop);
  }
  if (turncatCmd->parsed()) {
    stopOnSignals(stop);
    return kturn::cli::runTurncat(turncat, std::cerr, stop);
  }
  if (icetestCmd->parsed()) {
    stopOnSignals(stop);
    return kturn::cli::runIcetest(icetest, std::cout, std::cerr, stop);
  }
  if (statusCmd->parsed()) return kturn::cli::runStatus(status, std::cout, std::cerr);
  if (authCmd->parsed()) return kturn::cli::runAuth(auth, std::cout, std::cerr);
  return kturn::cli::kExitUsage;
}
