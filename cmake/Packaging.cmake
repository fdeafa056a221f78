# What goes beside the binary, and the Debian package: `cpack -G DEB` in a build directory (scripts/package.sh
# makes a Release one) writes goarchive_<version>_<arch>.deb, its Depends computed by dpkg-shlibdeps.
#
# `cmake --install` installs the binary, the man pages (gzipped), the bash completion and the examples under the
# prefix. The files with a fixed system path (the systemd units, the cron example, /etc/goarchive) are in the
# component "system", left out of a plain `cmake --install` (it would write them outside the prefix) and put
# into the package; `cmake --install BUILD --component system` installs them by hand.

# cpack (and `make install`) package what the last build made and never build themselves: build first
# (scripts/package.sh does), and tests/e2e/test_package.py packs the binary ctest tested without relinking it.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# Man pages compressed as Debian wants them: gzip -9n (no name or time stamp, so the bytes are reproducible).
find_program(GOARCHIVE_GZIP gzip REQUIRED)
set(_man_pages)
foreach(_page goarchive.1 goarchive.toml.5)
  set(_gz ${CMAKE_CURRENT_BINARY_DIR}/man/${_page}.gz)
  add_custom_command(
    OUTPUT ${_gz}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/man
    COMMAND sh -c "\"$0\" -9n -c \"$1\" > \"$2\"" ${GOARCHIVE_GZIP} ${CMAKE_CURRENT_SOURCE_DIR}/man/${_page} ${_gz}
    DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/man/${_page}
    COMMENT "Compressing man/${_page}"
    VERBATIM)
  list(APPEND _man_pages ${_gz})
endforeach()
add_custom_target(goarchive_man ALL DEPENDS ${_man_pages})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/man/goarchive.1.gz DESTINATION share/man/man1)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/man/goarchive.toml.5.gz DESTINATION share/man/man5)

install(FILES packaging/goarchive.bash-completion DESTINATION share/bash-completion/completions RENAME goarchive)
install(FILES packaging/goarchive.toml examples/shop.toml examples/shop_schema.sql examples/shop_data.sql
        DESTINATION share/doc/goarchive/examples)

install(FILES packaging/goarchive@.service packaging/goarchive@.timer DESTINATION /lib/systemd/system
        COMPONENT system EXCLUDE_FROM_ALL)
install(FILES packaging/goarchive.cron DESTINATION /etc/cron.d RENAME goarchive COMPONENT system EXCLUDE_FROM_ALL)
install(DIRECTORY DESTINATION /etc/goarchive COMPONENT system EXCLUDE_FROM_ALL)
install(DIRECTORY DESTINATION /var/log/goarchive COMPONENT system EXCLUDE_FROM_ALL)

# The cron example is a conffile: an admin's edits survive an upgrade.
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/packaging/conffiles "/etc/cron.d/goarchive\n")

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME goarchive)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(GOARCHIVE_MAINTAINER "goarchive maintainers <goarchive@localhost>" CACHE STRING
    "The Maintainer field of the Debian package (cmake -DGOARCHIVE_MAINTAINER=\"Name <address>\")")
set(CPACK_PACKAGE_CONTACT "${GOARCHIVE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "archiver for MySQL/MariaDB: cold rows with every dependent child row")
# The extended description; CPack puts the summary above it and indents it as a control field.
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "goarchive moves the cold rows of a root table together with every dependent
child row (a declared foreign-key tree) from a source server to an archive
server: copy parent-first, verify, delete child-first, in small batches,
resumable after any crash, safe against overlapping runs.

The package holds the binary, goarchive(1) and goarchive.toml(5), bash
completion, the systemd template units goarchive@.service and
goarchive@.timer (the instance is the job name), a commented cron example
and an annotated example configuration.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "bash-completion, mariadb-client")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${CMAKE_CURRENT_BINARY_DIR}/packaging/conffiles)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
# One package from both components.
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_COMPONENTS_ALL Unspecified system)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
