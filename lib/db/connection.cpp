#include "db/connection.h"

#include <errmsg.h>
#include <mysql.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cmath>
#include <cstring>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/error.h"

namespace goarchive::db {

namespace {

// LOAD DATA LOCAL from memory only: the handler serves the buffer armed by load_data_local() whatever file name
// the server asks for, and fails when none is armed, so a server can never read a local file.
int infile_init(void** ptr, const char* /*filename*/, void* userdata) {
  *ptr = userdata;
  auto* in = static_cast<Connection::Infile*>(userdata);
  if (!in || !in->data) return 1;
  in->pos = 0;
  return 0;
}

int infile_read(void* ptr, char* buf, unsigned int len) {
  auto* in = static_cast<Connection::Infile*>(ptr);
  if (!in || !in->data) return -1;
  size_t n = std::min<size_t>(len, in->size - in->pos);
  std::memcpy(buf, in->data + in->pos, n);
  in->pos += n;
  return static_cast<int>(n);
}

void infile_end(void* /*ptr*/) {}

int infile_error(void* /*ptr*/, char* msg, unsigned int len) {
  std::snprintf(msg, len, "goarchive sends no local file except its own in-memory copy data");
  return CR_UNKNOWN_ERROR;
}

// TCP keepalive: a peer that vanished (lost host or network) is noticed within about two minutes instead of
// the kernel's two hours, on both the client and, for the server's socket, through the server's own timeouts.
void enable_keepalive(my_socket fd) {
  if (fd < 0) return;
  int on = 1, idle = 60, interval = 10, count = 6;
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

// The TLS options of `server` (none when disabled or `plaintext`): files, enforcement, verification of the
// certificate. Connector/C starts TLS only when some TLS option is set: `preferred` sets SSL_ENFORCE, which
// Debian's Connector/C 3.3 treats as "TLS when the server offers it" (MDEV-28634); a later one that refuses a
// server without TLS then gets a second, plaintext attempt (Connection's constructor).
void set_tls_options(MYSQL* mysql, const config::ServerConfig& server, bool plaintext) {
  using config::TlsMode;
  my_bool on = 1;
  if (server.tls == TlsMode::disabled || plaintext) return;
  if (!server.tls_ca.empty()) mysql_optionsv(mysql, MYSQL_OPT_SSL_CA, server.tls_ca.c_str());
  if (!server.tls_cert.empty()) mysql_optionsv(mysql, MYSQL_OPT_SSL_CERT, server.tls_cert.c_str());
  if (!server.tls_key.empty()) mysql_optionsv(mysql, MYSQL_OPT_SSL_KEY, server.tls_key.c_str());
  // caching_sha2_password / sha256_password without TLS: the password goes RSA-encrypted with this key; without
  // it Connector/C asks the server for its key (which a man in the middle could answer).
  if (!server.server_public_key.empty()) {
    mysql_optionsv(mysql, MYSQL_SERVER_PUBLIC_KEY, server.server_public_key.c_str());
  }
  mysql_optionsv(mysql, MYSQL_OPT_SSL_ENFORCE, &on);
  if (server.tls == TlsMode::verify_ca || server.tls == TlsMode::verify_identity) {
    mysql_optionsv(mysql, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &on);
  }
}

// What to check after a failed connect, by client or server error code ("" when nothing specific).
std::string connect_hint(unsigned int code, const std::string& role) {
  if (code == 1045) return "; check the user and password of [" + role + "]";
  if (code == 2002 || code == 2003 || code == 2013) return "; check host, port and that the server is running";
  if (code == 2026) return "; check the TLS settings (tls, tls_ca) of [" + role + "]";
  if (code == 1044 || code == 1049) return "; check the database name of [" + role + "]";
  return "";
}

}  // namespace

Connection::Connection(const config::ServerConfig& server, ConnectOptions options)
    : m_server(server), m_options(std::move(options)) {
  if (!server.password_error.empty()) throw ConfigError(server.password_error);
  bool connected = connect(false);
  if (!connected && server.tls == config::TlsMode::preferred && mysql_errno(m_mysql) == 2026) {
    // A Connector/C that refuses a server without TLS under SSL_ENFORCE: `preferred` goes on in plaintext.
    mysql_close(m_mysql);
    m_mysql = nullptr;
    connected = connect(true);
  }
  if (!connected) {
    unsigned int code = mysql_errno(m_mysql);
    std::string state = mysql_sqlstate(m_mysql);
    std::string msg = mysql_error(m_mysql);
    mysql_close(m_mysql);
    m_mysql = nullptr;
    throw DbError(code, state, label(), m_options.purpose.empty() ? "connecting" : "connecting (" + m_options.purpose + ")",
                  "cannot connect to " + server.role + " " + server.display() + ": " + msg +
                      connect_hint(code, server.role));
  }
  // The destructor does not run when the constructor throws: close the handle on any failure from here on.
  try {
    finish_connect();
  } catch (...) {
    mysql_close(m_mysql);
    m_mysql = nullptr;
    throw;
  }
}

bool Connection::connect(bool plaintext) {
  const config::ServerConfig& server = m_server;
  m_mysql = mysql_init(nullptr);
  if (!m_mysql) throw Error("out of memory in mysql_init");
  auto seconds = [](double s) { return static_cast<unsigned int>(std::max(1.0, std::ceil(s))); };
  unsigned int connect_timeout = seconds(server.connect_timeout);
  unsigned int read_timeout = seconds(m_options.read_timeout.value_or(server.read_timeout));
  unsigned int write_timeout = seconds(server.write_timeout);
  my_bool off = 0, on = 1;
  mysql_optionsv(m_mysql, MYSQL_OPT_RECONNECT, &off);  // a reconnect would silently drop named locks
  mysql_optionsv(m_mysql, MYSQL_OPT_CONNECT_TIMEOUT, &connect_timeout);
  mysql_optionsv(m_mysql, MYSQL_OPT_READ_TIMEOUT, &read_timeout);
  mysql_optionsv(m_mysql, MYSQL_OPT_WRITE_TIMEOUT, &write_timeout);
  mysql_optionsv(m_mysql, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  mysql_optionsv(m_mysql, MARIADB_OPT_FOUND_ROWS, &on);  // affected rows = rows matched, for guarded UPDATEs
  // LOAD DATA LOCAL for the copy, served from memory only (infile_init): no local file is ever read.
  mysql_optionsv(m_mysql, MYSQL_OPT_LOCAL_INFILE, &on);
  mysql_set_local_infile_handler(m_mysql, infile_init, infile_read, infile_end, infile_error, &m_infile);
  if (!server.defaults_file.empty()) {
    mysql_optionsv(m_mysql, MYSQL_READ_DEFAULT_FILE, server.defaults_file.c_str());
    mysql_optionsv(m_mysql, MYSQL_READ_DEFAULT_GROUP, "client");
  }
  if (server.socket.empty()) {
    unsigned int tcp = MYSQL_PROTOCOL_TCP;
    mysql_optionsv(m_mysql, MYSQL_OPT_PROTOCOL, &tcp);
  }
  set_tls_options(m_mysql, server, plaintext);
  const char* host = server.socket.empty() ? server.host.c_str() : nullptr;
  const char* user = server.user.empty() ? nullptr : server.user.c_str();
  const char* password = server.password.empty() && !server.defaults_file.empty() ? nullptr
                                                                                  : server.password.reveal().c_str();
  const char* socket = server.socket.empty() ? nullptr : server.socket.c_str();
  return mysql_real_connect(m_mysql, host, user, password, nullptr, static_cast<unsigned int>(server.port), socket,
                            CLIENT_FOUND_ROWS) != nullptr;
}

void Connection::finish_connect() {
  const config::ServerConfig& server = m_server;
  using config::TlsMode;
  // A defaults file is read inside mysql_real_connect, after our options: its `reconnect = 1` would turn the
  // reconnect back on, and a reconnected session silently has the server's time zone, character set and sql_mode
  // and none of its named locks. Off again, and checked.
  my_bool off = 0, reconnect = 1;
  mysql_optionsv(m_mysql, MYSQL_OPT_RECONNECT, &off);
  if (mysql_get_optionv(m_mysql, MYSQL_OPT_RECONNECT, &reconnect) != 0 || reconnect) {
    throw ConfigError("cannot turn off the automatic reconnect of the " + server.role +
                      " connection (a defaults_file says reconnect); remove that line from the file");
  }
  // Connector/C's SSL_ENFORCE alone can fall back to plaintext (MDEV-28634): check the cipher ourselves.
  if (server.tls != TlsMode::disabled && server.tls != TlsMode::preferred && !tls_active()) {
    throw DbError(2026, "HY000", label(), "connecting",
                  "tls = \"" + std::string(config::to_string(server.tls)) + "\" but " + server.role + " " +
                      server.display() + " did not negotiate TLS; enable TLS on the server or lower the tls mode");
  }
  if (server.socket.empty()) enable_keepalive(mysql_get_socket(m_mysql));
  const char* ver = mysql_get_server_info(m_mysql);
  m_info.version = ver ? ver : "";
  m_info.dialect = Dialect::connected(m_info.version, mysql_get_server_version(m_mysql));
  m_info.connection_id = mysql_thread_id(m_mysql);
  // Our own session settings, whatever an option file, init_connect or the server's globals said: utf8mb4 both
  // ways (a defaults file's default-character-set = utf8 would turn 4-byte characters into '?' on both sides, and
  // the comparison of the two would pass), the same text for every value on both servers (UTC), strict inserts,
  // and 0 kept as a key value instead of becoming the next AUTO_INCREMENT. mysql_set_character_set also switches
  // the client library's own character set, which a defaults file may have set.
  if (mysql_set_character_set(m_mysql, "utf8mb4") != 0) fail("setting the connection character set to utf8mb4");
  execute(std::string("SET SESSION time_zone = '+00:00', sql_mode = '") + k_session_sql_mode +
          "', group_concat_max_len = 1048576");
  RowSet r = query("SELECT @@max_allowed_packet, CONNECTION_ID(), @@character_set_client, "
                   "@@character_set_connection, @@character_set_results, @@collation_connection, @@time_zone, "
                   "@@sql_mode");  // one round trip for all
  if (r.rows() != 1 || r.cols() != 8) throw DbError(0, "HY000", label(), "connecting", "cannot read the session settings");
  if (!r.is_null(0, 0)) m_max_allowed_packet = std::stoull(r.text(0, 0));
  if (!r.is_null(0, 1)) m_info.connection_id = std::stoull(r.text(0, 1));
  std::vector<std::string> values;
  for (size_t c = 2; c < 8; ++c) values.push_back(r.is_null(0, c) ? "NULL" : r.text(0, c));
  if (std::string problem = session_problem(values); !problem.empty()) {
    throw ConfigError("the " + server.role + " session " + problem + " after goarchive set it, so values could not be "
                      "copied exactly; something between goarchive and " + server.role + " " + server.display() +
                      " changes session settings (a proxy, a plugin): connect to the server directly");
  }
}

std::string session_problem(const std::vector<std::string>& v) {
  static const char* const names[] = {"character_set_client", "character_set_connection", "character_set_results",
                                      "collation_connection", "time_zone", "sql_mode"};
  if (v.size() != 6) return "settings could not be read";
  for (size_t i = 0; i < 3; ++i) {
    if (v[i] != "utf8mb4") return fmt::format("has {} = {} (not utf8mb4)", names[i], v[i]);
  }
  if (v[3].rfind("utf8mb4_", 0) != 0) return fmt::format("has collation_connection = {} (not utf8mb4)", v[3]);
  if (v[4] != "+00:00") return fmt::format("has time_zone = {} (not +00:00)", v[4]);
  auto modes = [](std::string text) {
    std::set<std::string> out;
    for (size_t at = 0; at <= text.size();) {
      size_t comma = std::min(text.find(',', at), text.size());
      if (comma > at) out.insert(text.substr(at, comma - at));
      at = comma + 1;
    }
    return out;
  };
  if (modes(v[5]) != modes(k_session_sql_mode)) return fmt::format("has sql_mode = {} (not {})", v[5], k_session_sql_mode);
  return "";
}

Connection::~Connection() {
  close_statements();
  if (m_mysql) mysql_close(m_mysql);
}

std::string Connection::label() const {
  return fmt::format("{} {}", m_server.role, m_server.socket.empty() ? fmt::format("{}:{}", m_server.host, m_server.port)
                                                                      : m_server.socket);
}

bool Connection::tls_active() const { return m_mysql && mysql_get_ssl_cipher(m_mysql) != nullptr; }

void Connection::fail(std::string_view what) {
  unsigned int code = mysql_errno(m_mysql);
  std::string state = mysql_sqlstate(m_mysql);
  std::string msg = mysql_error(m_mysql);
  if (is_connection_lost(code, state)) m_in_transaction = false;
  throw DbError(code, state, label(), m_options.purpose, fmt::format("{}: {}", what, msg));
}

void Connection::run(std::string_view sql) {
  if (!m_mysql) throw DbError(2006, "HY000", label(), m_options.purpose, "connection is closed");
  const std::string* text;
  if (m_tag.empty()) {
    m_buffer.assign(sql);
  } else {
    m_buffer.clear();
    m_buffer.reserve(m_tag.size() + 1 + sql.size());
    m_buffer.append(m_tag).append(" ").append(sql);
  }
  text = &m_buffer;
  if (spdlog::should_log(spdlog::level::trace)) {
    spdlog::trace("[{}] {}", m_options.purpose, text->size() > 2000 ? text->substr(0, 2000) + "..." : *text);
  }
  if (mysql_real_query(m_mysql, text->data(), text->size()) != 0) fail("statement failed");
}

uint64_t Connection::execute(std::string_view sql) {
  run(sql);
  MYSQL_RES* res = mysql_store_result(m_mysql);
  if (res) mysql_free_result(res);
  else if (mysql_errno(m_mysql)) fail("statement failed");
  my_ulonglong n = mysql_affected_rows(m_mysql);
  return n == static_cast<my_ulonglong>(-1) ? 0 : n;
}

RowSet Connection::query(std::string_view sql) {
  run(sql);
  MYSQL_RES* res = mysql_store_result(m_mysql);
  RowSet out;
  if (!res) {
    if (mysql_errno(m_mysql)) fail("query failed");
    return out;
  }
  std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> guard(res, mysql_free_result);
  unsigned int cols = mysql_num_fields(res);
  MYSQL_FIELD* fields = mysql_fetch_fields(res);
  std::vector<std::string> names;
  for (unsigned int i = 0; i < cols; ++i) names.emplace_back(fields[i].name);
  out.set_columns(std::move(names));
  // The stored result is walked twice: first for its size, so that its cells are copied once, without the
  // reallocations of a growing buffer.
  size_t bytes = 0;
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* lengths = mysql_fetch_lengths(res);
    for (unsigned int i = 0; i < cols; ++i) bytes += row[i] ? lengths[i] : 0;
  }
  mysql_data_seek(res, 0);
  out.reserve(static_cast<size_t>(mysql_num_rows(res)) * cols, bytes);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    unsigned long* lengths = mysql_fetch_lengths(res);
    for (unsigned int i = 0; i < cols; ++i) out.push(row[i], row[i] ? lengths[i] : 0);
  }
  if (mysql_errno(m_mysql)) fail("reading the result failed");
  return out;
}

void Connection::stream(std::string_view sql,
                        const std::function<void(const char* const*, const unsigned long*, size_t)>& on_row) {
  run(sql);
  MYSQL_RES* res = mysql_use_result(m_mysql);
  if (!res) {
    if (mysql_errno(m_mysql)) fail("query failed");
    return;
  }
  std::unique_ptr<MYSQL_RES, decltype(&mysql_free_result)> guard(res, mysql_free_result);
  size_t cols = mysql_num_fields(res);
  while (MYSQL_ROW row = mysql_fetch_row(res)) {
    on_row(row, mysql_fetch_lengths(res), cols);
  }
  if (mysql_errno(m_mysql)) fail("reading the result failed");
}

std::optional<std::string> Connection::scalar(std::string_view sql) {
  RowSet r = query(sql);
  if (r.rows() == 0 || r.cols() == 0 || r.is_null(0, 0)) return std::nullopt;
  return r.text(0, 0);
}

void Connection::begin(bool read_only, bool consistent_snapshot) {
  if (consistent_snapshot) execute(read_only ? "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY"
                                             : "START TRANSACTION WITH CONSISTENT SNAPSHOT");
  else execute(read_only ? "START TRANSACTION READ ONLY" : "START TRANSACTION");
  m_in_transaction = true;
}

void Connection::commit() {
  if (mysql_commit(m_mysql) != 0) {
    m_in_transaction = false;
    fail("COMMIT failed");
  }
  m_in_transaction = false;
}

void Connection::rollback() noexcept {
  if (m_mysql) mysql_rollback(m_mysql);
  m_in_transaction = false;
}

uint64_t Connection::load_data_local(std::string_view sql, std::string_view data) {
  m_infile = Infile{data.data(), data.size(), 0};
  try {
    uint64_t n = execute(sql);
    m_infile = Infile{};
    return n;
  } catch (...) {
    m_infile = Infile{};
    throw;
  }
}

unsigned int Connection::warning_count() const { return m_mysql ? mysql_warning_count(m_mysql) : 0; }

unsigned long long Connection::last_insert_id() const { return m_mysql ? mysql_insert_id(m_mysql) : 0; }


}  // namespace goarchive::db
