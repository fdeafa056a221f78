#pragma once
// The error types that reach the top level, each mapped to one exit code (DESIGN.md §3).
#include <stdexcept>
#include <string>

namespace goarchive {

enum ExitCode : int {
  k_exit_ok = 0,
  k_exit_failed = 1,
  k_exit_usage = 2,
  k_exit_busy = 4,
  k_exit_sigint = 130,
  k_exit_sigterm = 143,
};

// Base of every error the tool reports; the message is what the operator reads.
class Error : public std::runtime_error {
public:
  explicit Error(const std::string& message, int exit_code = k_exit_failed)
      : std::runtime_error(message), m_exit_code(exit_code) {}
  int exit_code() const { return m_exit_code; }

private:
  int m_exit_code;
};

// Bad flags or configuration: nothing was touched (exit 2).
class ConfigError : public Error {
public:
  explicit ConfigError(const std::string& message) : Error(message, k_exit_usage) {}
};

// Another run holds what this run needs: it did nothing; try again later (exit 4).
class BusyError : public Error {
public:
  explicit BusyError(const std::string& message) : Error(message, k_exit_busy) {}
};

// A preflight check refused the job before any data moved (exit 1).
class PreflightError : public Error {
public:
  explicit PreflightError(const std::string& message) : Error(message, k_exit_failed) {}
};

// The run stopped because a signal asked it to, at a batch boundary.
class InterruptedError : public Error {
public:
  explicit InterruptedError(int signal_number)
      : Error(signal_number == 2 ? "interrupted by SIGINT" : "interrupted by SIGTERM",
              signal_number == 2 ? k_exit_sigint : k_exit_sigterm) {}
};

}  // namespace goarchive
