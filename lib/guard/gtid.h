#pragma once
// "Same source data" (seed 001, DESIGN.md §6) from recorded server identity and GTID state. Pure logic.
#include <optional>
#include <string>
#include <vector>

namespace goarchive::guard {

// What a source server says about itself, recorded in the registry with each job.
struct SourceIdentity {
  std::string flavor;  // "mariadb" or "mysql"
  std::string host;    // as configured
  unsigned port = 0;
  std::string database;
  std::optional<unsigned long long> server_id;
  std::optional<unsigned long long> gtid_domain;  // MariaDB @@gtid_domain_id
  std::string server_uuid;                        // MySQL @@server_uuid
  // MariaDB: @@gtid_binlog_state + "," + @@gtid_slave_pos; MySQL: @@gtid_executed (only when gtid_mode = ON).
  std::string gtid_state;
  bool gtid_known = false;  // false: binlog/GTID off, or a Group Replication member: the server cannot tell
};

struct MariaGtid {
  unsigned long long domain = 0, server_id = 0, seq = 0;
};
// Parses "1-1-6,2-2-1" (whitespace and newlines allowed). Invalid entries are skipped.
std::vector<MariaGtid> parse_mariadb_gtids(const std::string& list);
// Parses a MySQL GTID set "uuid:1-5:7,uuid2:1-3" into the server UUIDs it contains (lower case).
std::vector<std::string> parse_mysql_gtid_uuids(const std::string& set);

// One interval of a MySQL GTID set: transactions first..last of server `uuid` (lower case) under `tag` ("" for
// untagged; MySQL 8.3+ tags, case-insensitive, kept lower case).
struct MysqlGtidInterval {
  std::string uuid, tag;
  unsigned long long first = 0, last = 0;
};
// Parses a MySQL GTID set, tagged or not: "uuid:1-3:11,uuid:tag:1-5:9" (whitespace and newlines allowed; a tag
// applies to the intervals after it). nullopt when any part is malformed.
std::optional<std::vector<MysqlGtidInterval>> parse_mysql_gtid_set(const std::string& set);
// Whether every transaction of GTID set `a` is in GTID set `b`, as the server's GTID_SUBSET(a, b); false when
// either is malformed.
bool mysql_gtid_subset(const std::string& a, const std::string& b);
// Whether the MySQL GTID history `later` (a server's @@gtid_executed now) holds every transaction of the
// non-empty history `earlier` (one recorded before, of this server or another): the server has applied all the
// other had, so it holds the same data or more (the same server, a replica caught up with it, or another replica
// of the same primary after a failover). False when `earlier` is empty or either set is malformed.
bool mysql_gtid_history_contains(const std::string& later, const std::string& earlier);

// True when `other` (another job's recorded source) is the same source data as `self` (this run's source):
// the same server; or a server whose transactions are in self's GTID state, or (MySQL) whose recorded GTID
// history self's holds whole (mysql_gtid_history_contains: a sibling replica); or, where either server cannot
// tell, the same database name.
bool same_source_data(const SourceIdentity& self, const SourceIdentity& other);

}  // namespace goarchive::guard
