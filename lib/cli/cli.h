#pragma once

namespace goarchive::cli {

// Parses argv, runs the command, maps every error to its exit code (DESIGN.md §3) and prints one message.
int run(int argc, char** argv);

}  // namespace goarchive::cli
