# Writes OUT (build_info.h) from IN with the current git commit of SOURCE_DIR, at every build, rewriting it only
# when its text changes: a rebuild after a commit names that commit, and nothing recompiles when it did not change.
execute_process(COMMAND git rev-parse --short=12 HEAD
  WORKING_DIRECTORY ${SOURCE_DIR}
  OUTPUT_VARIABLE GOARCHIVE_GIT_COMMIT OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT GOARCHIVE_GIT_COMMIT)
  set(GOARCHIVE_GIT_COMMIT "unknown")
endif()
set(PROJECT_VERSION ${VERSION})
configure_file(${IN} ${OUT}.tmp @ONLY)
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
