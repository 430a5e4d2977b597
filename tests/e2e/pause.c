/* The e2e cluster's pod sandbox process (the "pause" container): it holds the pod's namespaces
 * open, reaps the zombies of a pod that shares its PID namespace, and exits 0 when told to stop.
 * Built statically by tests/e2e/cluster.py into a one-file image, because no registry is
 * reachable to pull Kubernetes' own. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char** argv) {
  if (argc > 1 && argv[1][0] == '-' && argv[1][1] == 'v') {
    puts("kturn-e2e pause");
    return 0;
  }
  if (getpid() != 1) fputs("pause: warning: not PID 1\n", stderr);
  struct sigaction stop_action = {.sa_handler = stop};
  struct sigaction reap_action = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &stop_action, NULL) < 0 || sigaction(SIGTERM, &stop_action, NULL) < 0 ||
      sigaction(SIGCHLD, &reap_action, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
