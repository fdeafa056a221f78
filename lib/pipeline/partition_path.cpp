#include "pipeline/partition_path.h"

#include <chrono>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "db/error.h"
#include "pipeline/destination_writer.h"
#include "pipeline/rows.h"
#include "pipeline/tree_reader.h"
#include "util/fault.h"
#include "util/strings.h"

namespace goarchive::pipeline {

namespace {

constexpr unsigned k_ddl_attempts = 4;  // each waits ddl_lock_wait_timeout; 1, 2, 4 s apart
constexpr unsigned k_ER_LOCK_WAIT_TIMEOUT = 1205;
constexpr unsigned k_ER_TABLE_EXISTS = 1050;
constexpr long long k_min_chunk = 5000;  // rows per copy transaction at least: the side table is ours alone

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool exchange(const Context& ctx) { return ctx.src.dialect().partition_detach() == db::PartitionDetach::exchange; }

}  // namespace

PartitionPath::PartitionPath(Context& ctx)
    : m_ctx(ctx),
      m_steps(ctx.registry, ctx.job_id, ctx.scope),
      m_database(ctx.root().source.database),
      m_table(ctx.root().node.table) {}

std::string PartitionPath::side_table_name(unsigned long long job_id, const std::string& partition) {
  std::string name = fmt::format("ga_{}_{}", job_id, partition);
  if (name.size() <= 64) return name;
  return fmt::format("ga_{}_{}", job_id, to_hex(sha256(partition)).substr(0, 16));
}

std::string PartitionPath::exclusion(const std::string& expression, const std::vector<PartitionFacts>& all,
                                     const std::vector<PartitionChoice>& left) {
  std::string out;
  // RANGE names one expression, RANGE COLUMNS a column list: both compare with their bounds as a row.
  const std::string expr = "(" + expression + ")";
  for (const auto& c : left) {
    for (size_t i = 0; i < all.size(); ++i) {
      if (all[i].name != c.name) continue;
      std::string within = fmt::format("{} < ({})", expr, all[i].description);
      if (i > 0) within = fmt::format("{} >= ({}) AND {}", expr, all[i - 1].description, within);
      out += fmt::format("{}NOT (({}) IS TRUE)", out.empty() ? "" : " AND ", within);
    }
  }
  return out;
}

std::string PartitionPath::side(const tracking::PartitionStep& step) const {
  return sql::qualified(m_database, step.side_table);
}

bool PartitionPath::table_exists(const std::string& table) const {
  return m_ctx.src
      .scalar(fmt::format("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = {} AND TABLE_NAME = {}",
                          sql::quote(m_database), sql::quote(table)))
      .value_or("0") != "0";
}

void PartitionPath::warn_in_the_way(const std::string& partition, const std::string& side_table) const {
  spdlog::warn("partition {}: a table {}.{} is in the way of its side table; its rows stay for a later run "
               "(rename or drop that table)",
               partition, m_database, side_table);
}

bool PartitionPath::has_partition(const std::string& partition) const {
  return m_ctx.src
      .scalar(fmt::format("SELECT COUNT(*) FROM information_schema.PARTITIONS WHERE TABLE_SCHEMA = {} AND "
                          "TABLE_NAME = {} AND PARTITION_NAME = {}",
                          sql::quote(m_database), sql::quote(m_table), sql::quote(partition)))
      .value_or("0") != "0";
}

bool PartitionPath::run() {
  // Unfinished steps first: a partition some run started is finished by the command that started it.
  for (auto& step : m_steps.unfinished(m_ctx.reg())) {
    if (step.command != mode_name(m_ctx.mode)) {
      throw Error(fmt::format("job {} has an unfinished {} of partition {} (its rows are in the side table {}.{}) "
                              "that only {} may finish; run `goarchive {} -j {}` first, then this command again",
                              m_ctx.job.name, step.command, step.partition, m_database, step.side_table, step.command,
                              step.command, m_ctx.job.name));
    }
    spdlog::info("partition {}: finishing the {} step a run before left ({})", step.partition, step.command,
                 step.state);
    if (!finish(step)) return false;
  }
  if (m_ctx.mode != Mode::archive && m_ctx.mode != Mode::purge) return true;
  m_layout = read_partitions(m_ctx.src, m_database, m_table);
  if (m_layout.empty() || m_ctx.job.partitions == "off") return true;
  std::vector<PartitionChoice> choices = plan_partitions(m_ctx, m_ctx.src);
  for (const auto& c : choices) spdlog::info("{}", describe(c));
  std::vector<PartitionChoice> whole;
  for (const auto& c : choices) {
    if (c.route != PartitionRoute::whole) continue;
    const std::string side_name = side_table_name(m_ctx.job_id, c.name);
    if (table_exists(side_name)) {
      m_left.push_back(c);
      warn_in_the_way(c.name, side_name);
      continue;
    }
    whole.push_back(c);
  }
  if (m_ctx.mode == Mode::purge && !exchange(m_ctx)) return purge_whole(whole);
  for (const auto& c : whole) {
    if (!m_ctx.hooks.boundary("partition")) return false;
    tracking::PartitionStep step = m_steps.begin(m_ctx.reg(), c.name, side_table_name(m_ctx.job_id, c.name),
                                                 mode_name(m_ctx.mode), exchange(m_ctx) ? "exchange" : "convert",
                                                 m_ctx.run_id);
    if (!finish(step)) return false;
    if (step.state == "left") m_left.push_back(c);
  }
  return true;
}

bool PartitionPath::purge_whole(const std::vector<PartitionChoice>& whole) {
  if (whole.empty()) return true;
  std::vector<tracking::PartitionStep> steps;
  {
    db::Transaction tx(m_ctx.reg());
    for (const auto& c : whole) {
      steps.push_back(m_steps.begin(m_ctx.reg(), c.name, side_table_name(m_ctx.job_id, c.name), "purge", "convert",
                                    m_ctx.run_id));
    }
    tx.commit();
  }
  std::vector<std::string> ends(steps.size(), "left");  // a partition this run never reached was never detached
  bool go_on = true;
  for (size_t i = 0; i < steps.size() && go_on; ++i) {
    go_on = m_ctx.hooks.boundary("partition");
    if (go_on) ends[i] = purge_step(steps[i], true);
    if (ends[i] == "left") m_left.push_back(whole[i]);
  }
  db::Transaction tx(m_ctx.reg());
  for (size_t i = 0; i < steps.size(); ++i) {
    if (ends[i] != steps[i].state) m_steps.move(m_ctx.reg(), steps[i], ends[i]);
  }
  tx.commit();
  return go_on;
}

std::string PartitionPath::purge_step(tracking::PartitionStep& step, bool fresh) {
  if (fresh || !table_exists(step.side_table)) {
    if (!fresh && !has_partition(step.partition)) {
      spdlog::info("partition {}: the run before purged it (neither it nor its side table is there)", step.partition);
      return "dropped";
    }
    fault::point("partition_detaching");
    try {
      if (!ddl(fmt::format("ALTER TABLE {} CONVERT PARTITION {} TO TABLE {}", sql::qualified(m_database, m_table),
                           sql::ident(step.partition), side(step)),
               "detaching partition " + step.partition)) {
        ++m_ctx.stats.partitions_left;
        return "left";
      }
    } catch (const db::DbError& e) {
      if (e.code() != k_ER_TABLE_EXISTS) throw;
      // Someone made a table of the side table's name since the plan: CONVERT is atomic, so nothing moved.
      warn_in_the_way(step.partition, step.side_table);
      ++m_ctx.stats.partitions_left;
      return "left";
    }
    fault::point("partition_after_detach");
    ++m_ctx.stats.partitions_detached;
  }
  prove_where(step);
  fault::point("partition_after_prove");
  fault::point("partition_copied");
  const unsigned long long estimate = rows_estimate(step.side_table);
  if (!ddl("DROP TABLE " + side(step), "dropping the side table of partition " + step.partition)) return "detaching";
  fault::point("partition_after_drop");
  ++m_ctx.stats.partitions_done;
  m_ctx.stats.partition_rows_estimate += estimate;
  spdlog::info("partition {}: ~{} row(s) purged; its side table is dropped (a purge does not count a partition's "
               "rows: ~ is the server's estimate)",
               step.partition, estimate);
  return "dropped";
}

bool PartitionPath::finish(tracking::PartitionStep& step) {
  if (step.command == "purge" && step.detach == "convert" && step.state == "detaching") {
    // purge_whole's step: where it stands is told by the side table and the table's layout.
    const std::string end = purge_step(step, false);
    if (end != step.state) m_steps.move(m_ctx.reg(), step, end);
    return true;
  }
  if (step.state == "detaching") {
    fault::point("partition_detaching");
    if (!detach(step)) return true;  // left for a later run
  }
  if (step.state == "detached") {
    if (!table_exists(step.side_table)) {
      throw Error(fmt::format("partition {}: its side table {}.{} is gone while the registry says its rows are "
                              "there (dropped by hand?); nothing was dropped by goarchive. Look for the rows, then "
                              "run `goarchive jobs` to see the step",
                              step.partition, m_database, step.side_table));
    }
    prove_where(step);
    fault::point("partition_after_prove");
    if (m_ctx.mode == Mode::archive) {
      if (!copy(step)) return false;
    } else {
      m_steps.move(m_ctx.reg(), step, "dropping");
    }
  }
  if (step.state == "copied" || step.state == "dropping") return drop(step);
  return true;
}

bool PartitionPath::detach(tracking::PartitionStep& step) {
  const std::string table = sql::qualified(m_database, m_table);
  const bool by_exchange = step.detach == "exchange";
  if (table_exists(step.side_table) && !by_exchange) {
    // CONVERT PARTITION is atomic: the side table exists only once the rows are in it.
    m_steps.move(m_ctx.reg(), step, "detached");
    return true;
  }
  bool done = false;
  if (!by_exchange) {
    done = ddl(fmt::format("ALTER TABLE {} CONVERT PARTITION {} TO TABLE {}", table, sql::ident(step.partition),
                           side(step)),
               "detaching partition " + step.partition);
  } else {
    // The empty twin, made once: a twin that holds rows already received the partition's (an EXCHANGE swaps).
    if (!table_exists(step.side_table)) {
      done = ddl(fmt::format("CREATE TABLE {} LIKE {}", side(step), table), "creating the side table");
      if (done) done = ddl(fmt::format("ALTER TABLE {} REMOVE PARTITIONING", side(step)), "making the side table plain");
    } else {
      done = true;
      bool partitioned = m_ctx.src
                             .scalar(fmt::format("SELECT COUNT(*) FROM information_schema.PARTITIONS WHERE "
                                                 "TABLE_SCHEMA = {} AND TABLE_NAME = {} AND PARTITION_NAME IS NOT NULL",
                                                 sql::quote(m_database), sql::quote(step.side_table)))
                             .value_or("0") != "0";
      if (partitioned) done = ddl(fmt::format("ALTER TABLE {} REMOVE PARTITIONING", side(step)), "making the side table plain");
    }
    bool holds = done && m_ctx.src.scalar(fmt::format("SELECT EXISTS (SELECT 1 FROM {})", side(step))).value_or("0") == "1";
    if (done && !holds) {
      done = ddl(fmt::format("ALTER TABLE {} EXCHANGE PARTITION {} WITH TABLE {}", table, sql::ident(step.partition),
                             side(step)),
                 "exchanging partition " + step.partition);
    }
  }
  if (!done) {
    if (by_exchange && table_exists(step.side_table) &&
        m_ctx.src.scalar(fmt::format("SELECT EXISTS (SELECT 1 FROM {})", side(step))).value_or("0") == "0") {
      m_ctx.src.execute("DROP TABLE IF EXISTS " + side(step));  // the empty twin, ours
    }
    m_steps.move(m_ctx.reg(), step, "left");
    ++m_ctx.stats.partitions_left;
    return false;
  }
  fault::point("partition_after_detach");
  m_steps.move(m_ctx.reg(), step, "detached");
  ++m_ctx.stats.partitions_detached;
  if (by_exchange) {
    spdlog::warn("partition {}: exchanged into {}.{}; the emptied partition stays in {} (a partition is dropped "
                 "only where the server detaches it atomically: a row that landed in it since would be lost with "
                 "it). Drop it by hand once it is empty: ALTER TABLE {} DROP PARTITION {}",
                 step.partition, m_database, step.side_table, table, table, sql::ident(step.partition));
  }
  return true;
}

bool PartitionPath::ddl(const std::string& statement, const std::string& what) {
  db::Connection& src = m_ctx.src;
  const std::string before = src.scalar("SELECT @@SESSION.lock_wait_timeout").value_or("31536000");
  src.execute(fmt::format("SET SESSION lock_wait_timeout = {}", m_ctx.job.ddl_lock_wait_timeout));
  struct Restore {
    db::Connection& c;
    const std::string& v;
    ~Restore() {
      try {
        c.execute("SET SESSION lock_wait_timeout = " + v);
      } catch (const std::exception&) {  // the session is gone: its settings with it
      }
    }
  } restore{src, before};
  for (unsigned attempt = 1;; ++attempt) {
    m_ctx.hooks.gate("partition");
    m_ctx.hooks.before_commit();  // never a DDL without the locks
    auto t0 = std::chrono::steady_clock::now();
    try {
      src.execute(statement);
      m_ctx.stats.t_ddl += since(t0);
      return true;
    } catch (const db::DbError& e) {
      m_ctx.stats.t_ddl += since(t0);
      if (e.code() != k_ER_LOCK_WAIT_TIMEOUT) throw;
      if (attempt == k_ddl_attempts) {
        spdlog::warn("{}: the table's metadata lock was not free within {} s, {} times (a long transaction or "
                     "statement holds it); left for the next run",
                     what, m_ctx.job.ddl_lock_wait_timeout, attempt);
        return false;
      }
      const unsigned pause = 1u << (attempt - 1);
      spdlog::info("{}: the table's metadata lock was not free within {} s; retry {} of {} in {} s", what,
                   m_ctx.job.ddl_lock_wait_timeout, attempt, k_ddl_attempts - 1, pause);
      std::this_thread::sleep_for(std::chrono::seconds(pause));
    }
  }
}

unsigned long long PartitionPath::move_back(const tracking::PartitionStep& step, const std::string& cond) {
  const TableMeta& root = m_ctx.root();
  db::Transaction tx(m_ctx.src);
  uint64_t in = m_ctx.src.execute(fmt::format("INSERT INTO {} ({}) SELECT {} FROM {} WHERE {}", root.source_name,
                                              root.insert_list, root.insert_list, side(step), cond));
  uint64_t out = m_ctx.src.execute(fmt::format("DELETE FROM {} WHERE {}", side(step), cond));
  if (in != out) {
    throw Error(fmt::format("partition {}: {} row(s) went back into {} but {} left the side table {}; rolled back",
                            step.partition, in, root.source_name, out, step.side_table));
  }
  m_ctx.hooks.before_commit();
  tx.commit();
  return in;
}

void PartitionPath::prove_where(tracking::PartitionStep& step) {
  const TableMeta& root = m_ctx.root();
  // The keys first, then the rows by key: `where` may read the clock, and a row must not be judged twice.
  db::RowSet keys = m_ctx.src.query(fmt::format("SELECT {} FROM {} AS {} WHERE {}", sql::ident_list(root.key_cols),
                                                side(step), sql::ident(m_table), not_true(m_ctx.job.where)));
  if (keys.rows() == 0) return;
  std::vector<sql::KeyLiterals> lits;
  std::vector<size_t> idx(root.key_cols.size());
  for (size_t k = 0; k < idx.size(); ++k) idx[k] = k;
  for (size_t r = 0; r < keys.rows(); ++r) {
    lits.push_back(wrap(literals(keys, r, idx, root.key_binary, root.key_integer), root.key_wrap));
  }
  unsigned long long back = 0;
  for (const auto& list : key_lists(root.key_cols, lits, statement_budget(m_ctx.src))) back += move_back(step, list);
  m_ctx.stats.partition_rows_back += back;
  spdlog::warn("partition {}: {} row(s) did not match where (a late insert, a changed row, or a layout that is not "
               "all inside where) and went back into {}",
               step.partition, back, root.source_name);
}

bool PartitionPath::copy(tracking::PartitionStep& step) {
  // The side table read as the root table: the same columns, read the same way, under the root table's name (so
  // that `where` resolves), copied by the row path's writer, which verifies every chunk against the archive.
  config::Job job = m_ctx.job;
  job.relations.clear();
  job.processing.batch_size = std::max(job.processing.batch_size, k_min_chunk);
  std::vector<TableMeta> tables{m_ctx.root()};
  tables[0].source_name = side(step) + " AS " + sql::ident(m_table);
  tables[0].outside.clear();
  Context side_ctx{Mode::archive, job, std::move(tables), {0}, {0}, m_ctx.src, m_ctx.dst, m_ctx.registry,
                   m_ctx.job_id, m_ctx.run_id, m_ctx.scope, m_ctx.hooks, Stats{}, nullptr, nullptr, nullptr, nullptr,
                   nullptr, false, {}};
  side_ctx.stats.tables.push_back(TableStats{m_table, 0, 0, 0, 0});
  TreeReader tree(side_ctx);
  DestinationWriter writer(side_ctx, tree);
  const TableMeta& root = side_ctx.root();
  std::optional<std::vector<std::string>> after;
  if (step.copied_after) after = tracking::decode_key(*step.copied_after);
  for (unsigned no = 1;; ++no) {
    if (!m_ctx.hooks.boundary("partition copy")) return false;
    m_ctx.hooks.gate("partition copy");
    auto t0 = std::chrono::steady_clock::now();
    db::RowSet rows = m_ctx.src.query(tree.keyset_query(after ? &*after : nullptr, root.select_list));
    m_ctx.stats.t_select += since(t0);
    if (rows.rows() == 0) break;
    Batch batch;
    batch.no = no;
    batch.tables.assign(1, TableRows{});
    std::vector<std::string> last;
    for (size_t r = 0; r < rows.rows(); ++r) {
      std::vector<std::string> key;
      for (size_t i : root.key_idx) key.push_back(rows.text(r, i));
      if (r + 1 == rows.rows()) last = key;
      batch.add_root(tracking::encode_key(key), std::move(key));
    }
    rows.set_columns(root.columns);
    TableRows& tb = batch.tables[0];
    tb.rows = std::move(rows);
    for (size_t r = 0; r < tb.size(); ++r) tb.index(encode_values(tb.rows, r, root.key_idx), static_cast<int>(r));
    batch.fate.assign(batch.roots.size(), RootFate::moved);
    const std::string last_key = tracking::encode_key(last).encoded;
    unsigned long long back = 0;
    t0 = std::chrono::steady_clock::now();
    while (true) {
      writer.prebuild(batch);
      batch.copied.assign(1, 0);
      batch.verified.assign(1, 0);
      tracking::PartitionStep saved = step;
      try {
        db::Transaction tx(m_ctx.dst);
        if (!batch.roots.empty()) {
          writer.copy(batch);
          writer.verify(batch);
        }
        m_steps.copied_upto(m_ctx.dst, step, last_key, batch.roots.size(), back);
        fault::point("partition_before_copy_commit");
        m_ctx.hooks.before_commit();
        tx.commit();
        break;
      } catch (const RootError& e) {
        step = saved;
        if (e.root() < 0) throw Error(e.what());
        // A row the archive holds already (not this job's: everything this job copied is before copied_after)
        // or cannot hold exactly: it goes back into the table, where the row path meets it as it would anyway.
        const size_t r = static_cast<size_t>(e.root());
        std::vector<sql::KeyLiterals> one{wrap(literals(batch.root_keys[r], root.key_binary, root.key_integer),
                                               root.key_wrap)};
        const std::string why = fmt::format("{}: {}", name_key(root, batch.root_keys[r]), e.what());
        back += move_back(step, key_lists(root.key_cols, one, statement_budget(m_ctx.src)).front());
        if (m_ctx.stats.add_blocked("partition " + step.partition + ": " + why)) {
          spdlog::warn("partition {}: {}; the row went back into {} and stays there", step.partition, why,
                       m_table);
        }
        batch.remove_root(r);
        batch.prebuilt = false;
      } catch (...) {
        step = saved;
        throw;
      }
    }
    fault::point("partition_after_copy_commit");
    m_ctx.stats.t_copy += since(t0);
    m_ctx.stats.partition_rows_back += back;
    m_ctx.stats.tables[0].copied += batch.copied[0];
    m_ctx.stats.tables[0].verified += batch.verified[0];
    m_ctx.stats.roots += batch.roots.size() + back;
    m_ctx.hooks.progress(m_ctx.stats, "partition copy");
    after = last;
  }
  // Every row of the side table is in the archive: the count the copies recorded is the side table's.
  const unsigned long long there = std::stoull(m_ctx.src.scalar("SELECT COUNT(*) FROM " + side(step)).value_or("0"));
  if (there != step.rows_copied) {
    throw Error(fmt::format("partition {}: the side table {}.{} holds {} row(s) but {} were copied into the archive; "
                            "nothing is dropped. Look at the side table, then rerun",
                            step.partition, m_database, step.side_table, there, step.rows_copied));
  }
  m_steps.move(m_ctx.reg(), step, "copied");
  return true;
}

unsigned long long PartitionPath::rows_estimate(const std::string& table) const {
  return std::stoull(m_ctx.src
                         .scalar(fmt::format("SELECT IFNULL(TABLE_ROWS, 0) FROM information_schema.TABLES WHERE "
                                             "TABLE_SCHEMA = {} AND TABLE_NAME = {}",
                                             sql::quote(m_database), sql::quote(table)))
                         .value_or("0"));
}

bool PartitionPath::drop(tracking::PartitionStep& step) {
  fault::point("partition_copied");
  const bool archive = m_ctx.mode == Mode::archive;
  unsigned long long rows = archive ? step.rows_copied : 0;
  if (table_exists(step.side_table)) {
    rows = archive ? std::stoull(m_ctx.src.scalar("SELECT COUNT(*) FROM " + side(step)).value_or("0"))
                   : rows_estimate(step.side_table);
    if (archive && rows != step.rows_copied) {
      throw Error(fmt::format("partition {}: the side table {}.{} holds {} row(s) but {} were copied into the "
                              "archive; nothing is dropped. Look at the side table, then rerun",
                              step.partition, m_database, step.side_table, rows, step.rows_copied));
    }
    if (!ddl("DROP TABLE " + side(step), "dropping the side table of partition " + step.partition)) return true;
  }
  fault::point("partition_after_drop");
  m_steps.move(m_ctx.reg(), step, "dropped");
  ++m_ctx.stats.partitions_done;
  if (archive) {
    m_ctx.stats.tables[0].deleted += rows;
    m_ctx.stats.roots_done += rows;
    spdlog::info("partition {}: {} row(s) archived; its side table is dropped", step.partition, rows);
  } else {
    m_ctx.stats.partition_rows_estimate += rows;
    spdlog::info("partition {}: ~{} row(s) purged; its side table is dropped (a purge does not count a "
                 "partition's rows: ~ is the server's estimate)",
                 step.partition, rows);
  }
  return true;
}

}  // namespace goarchive::pipeline
