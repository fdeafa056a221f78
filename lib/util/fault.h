#pragma once
// Test-only fault hooks: GOARCHIVE_FAULT=<point>[:<n>] kills the process with SIGKILL at the n-th time (default 1st)
// it passes <point>; GOARCHIVE_PAUSE=<point>:<n>:<file> writes <file>.reached there and waits while <file> exists. Compiled out of release builds (GOARCHIVE_FAULT_HOOKS off).
namespace goarchive::fault {

#ifdef GOARCHIVE_FAULT_HOOKS
void point(const char* name);
#else
inline void point(const char*) {}
#endif

}  // namespace goarchive::fault
