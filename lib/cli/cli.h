#pragma once
// The command line: flags to commands, errors to exit codes and one message. It never touches a server itself.

namespace goarchive::cli {

// Parses argv, runs the command, maps every error to its exit code (DESIGN.md §3) and prints one message.
int run(int argc, char** argv);

}  // namespace goarchive::cli
