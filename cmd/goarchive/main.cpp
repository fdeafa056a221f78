#include "cli/cli.h"

int main(int argc, char** argv) { return goarchive::cli::run(argc, argv); }
