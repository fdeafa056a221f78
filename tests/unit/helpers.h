#pragma once
// Shared helpers for the unit tests.
#include <exception>
#include <string>

namespace goarchive::test {

// Runs `fn`, which must throw `E`, and returns the exception's message ("" and a failed check otherwise).
template <class E, class Fn>
std::string message_of(Fn&& fn) {
  try {
    fn();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<unexpected exception type: ") + e.what() + ">";
  }
  return "<no exception>";
}

}  // namespace goarchive::test
