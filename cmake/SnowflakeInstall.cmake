# `cmake --install`: the daemon, its systemd unit and a default config, in
# the usual places for the prefix (the Debian package uses /usr, so /usr/bin,
# /usr/lib/systemd/system, /etc/snowflaked). Then CPack's .deb.

include(GNUInstallDirs)

install(TARGETS snowflaked RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")
install(FILES README.md CHANGELOG.md packaging/debian/copyright DESTINATION "${CMAKE_INSTALL_DOCDIR}")
# The docs for those who use and run it (README.md links them as docs/*.md);
# testing.md and CONTRIBUTING.md are for those who change it, in the source.
install(FILES docs/api.md docs/configuration.md docs/design.md docs/migration.md
              docs/monitoring.md docs/operations.md
        DESTINATION "${CMAKE_INSTALL_DOCDIR}/docs")

# The unit and the config depend on the prefix chosen at install time
# (`cmake --install --prefix`, or CPack's /usr), so they are placed then:
# config in /etc/snowflaked for the /usr prefix, <prefix>/etc/snowflaked
# otherwise; the unit in <prefix>/lib/systemd/system (systemd reads it there
# for /usr and /usr/local), its paths rewritten from the Debian package's.
set(install_code [[
  if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
    set(config_dir "/etc/snowflaked")
  else()
    set(config_dir "${CMAKE_INSTALL_PREFIX}/etc/snowflaked")
  endif()
  file(READ "@unit_source@" unit)
  string(REPLACE "/usr/bin/snowflaked" "${CMAKE_INSTALL_PREFIX}/bin/snowflaked" unit "${unit}")
  string(REPLACE "/etc/snowflaked/" "${config_dir}/" unit "${unit}")
  string(REPLACE "/usr/share/doc/" "${CMAKE_INSTALL_PREFIX}/share/doc/" unit "${unit}")
  file(WRITE "@unit_staged@" "${unit}")
  file(INSTALL "@unit_staged@" DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
  file(INSTALL "@config_source@" DESTINATION "${config_dir}")
]])
set(unit_source "${PROJECT_SOURCE_DIR}/systemd/snowflaked.service")
set(unit_staged "${PROJECT_BINARY_DIR}/install/snowflaked.service")
set(config_source "${PROJECT_SOURCE_DIR}/conf/snowflaked.json")
string(CONFIGURE "${install_code}" install_code @ONLY)
install(CODE "${install_code}")
# The .deb: `cpack -G DEB` in a build tree (scripts/package-deb.sh builds a
# Release tree for it).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # whatever prefix the build tree has
set(CPACK_SET_DESTDIR ON)  # the config's destination, /etc, is absolute
set(CPACK_PACKAGE_NAME snowflaked)
set(CPACK_PACKAGE_VENDOR "snowflaked developers")
set(CPACK_PACKAGE_CONTACT "snowflaked developers <dev@snowflaked.local>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "${PROJECT_DESCRIPTION}")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
    "ZooKeeper-coordinated 64-bit snowflake ID service\n\
snowflaked issues unique 64-bit IDs over HTTP/JSON (GET /id/<tag>). Worker\n\
IDs come from ZooKeeper (a persistent sequential node, or a recyclable pool\n\
for short-lived instances), are cached locally and kept by a heartbeat;\n\
when uniqueness cannot be proven the daemon refuses with 503.")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
# Debian ships debug info apart (-dbgsym); the package carries a stripped binary.
set(CPACK_STRIP_FILES ON)
# dpkg-shlibdeps works out the library packages from the binary itself.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# and one it cannot: the time zones a sequence that restarts each day, month
# or year counts its periods in (cctz reads them from /usr/share/zoneinfo).
set(CPACK_DEBIAN_PACKAGE_DEPENDS "tzdata")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "curl")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "zookeeperd")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# conffiles: dpkg keeps an edited config across upgrades. The scripts only
# tell systemd about the unit; nothing is enabled or started until the
# operator has pointed the config at ZooKeeper.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${PROJECT_SOURCE_DIR}/packaging/debian/conffiles"
    "${PROJECT_SOURCE_DIR}/packaging/debian/postinst"
    "${PROJECT_SOURCE_DIR}/packaging/debian/prerm"
    "${PROJECT_SOURCE_DIR}/packaging/debian/postrm")
include(CPack)
