// tools/hangdx/watch_main.h
// `hangdx watch`: the live watchdog (hangdx/live/watcher.h). main.cc hands
// it argv when the first argument is "watch".
#pragma once

namespace hangdx::tools {

// Parses the watch flags (argv[0] is "watch"), runs the watch, and returns
// the exit code: 0 nothing found, 1 a hang found with --exit-on-finding,
// 2 a usage error or a failure to start.
int WatchMain(int argc, char** argv);

}  // namespace hangdx::tools
