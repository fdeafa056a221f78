// Unit tests of lib/plan/ddl: the destination's CREATE TABLE rewritten from SHOW CREATE TABLE text.
// The inputs are SHOW CREATE TABLE output recorded from MariaDB 10.11 (and MySQL 8.0 from its documentation).
#include <doctest/doctest.h>

#include <string>

#include "helpers.h"
#include "plan/ddl.h"
#include "util/error.h"

namespace plan = goarchive::plan;

namespace {

plan::DdlRewrite child_of(std::string parent, std::vector<std::string> columns) {
  plan::DdlRewrite rw;
  rw.source_database = "shop";
  rw.destination_database = "shop_archive";
  rw.job_tables = {"orders", "order_items", "shipments", "shipment_items", parent};
  rw.parent = plan::ParentReference{std::move(parent), std::move(columns)};
  return rw;
}

plan::DdlRewrite root() {
  plan::DdlRewrite rw;
  rw.source_database = "shop";
  rw.destination_database = "shop_archive";
  rw.job_tables = {"orders", "order_items"};
  return rw;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  for (const auto& l : lines) {
    if (contains(l, part)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("ddl: the root loses its FK to a table outside the job and its AUTO_INCREMENT, keeps its indexes") {
  const char* in = "CREATE TABLE `orders` (\n"
                   "  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
                   "  `customer_id` bigint(20) unsigned NOT NULL,\n"
                   "  `created_at` datetime NOT NULL,\n"
                   "  `note` text DEFAULT NULL,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  KEY `k_created` (`created_at`),\n"
                   "  KEY `fk_orders_customer` (`customer_id`),\n"
                   "  CONSTRAINT `fk_orders_customer` FOREIGN KEY (`customer_id`) REFERENCES `customers` (`id`)\n"
                   ") ENGINE=InnoDB AUTO_INCREMENT=301 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";
  auto out = plan::destination_ddl(in, root());
  CHECK(out.table == "orders");
  CHECK(out.sql == "CREATE TABLE `shop_archive`.`orders` (\n"
                   "  `id` bigint(20) unsigned NOT NULL,\n"
                   "  `customer_id` bigint(20) unsigned NOT NULL,\n"
                   "  `created_at` datetime NOT NULL,\n"
                   "  `note` text DEFAULT NULL,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  KEY `k_created` (`created_at`),\n"
                   "  KEY `fk_orders_customer` (`customer_id`)\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci");
  REQUIRE(out.dropped.size() == 3);
  CHECK(out.dropped[0] == "the AUTO_INCREMENT attribute of column id");
  CHECK(out.dropped[1] == "foreign key fk_orders_customer (customer_id) references customers: not a table of the job");
  CHECK(out.dropped[2] == "the table option AUTO_INCREMENT=301");
}

TEST_CASE("ddl: a child keeps the FK to its parent, re-qualified to the destination database") {
  const char* in = "CREATE TABLE `order_items` (\n"
                   "  `id` bigint(20) unsigned NOT NULL AUTO_INCREMENT,\n"
                   "  `order_id` bigint(20) unsigned NOT NULL,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  KEY `fk_items_order` (`order_id`),\n"
                   "  CONSTRAINT `fk_items_order` FOREIGN KEY (`order_id`) REFERENCES `orders` (`id`) ON DELETE "
                   "CASCADE ON UPDATE NO ACTION\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";
  auto out = plan::destination_ddl(in, child_of("orders", {"order_id"}));
  CHECK(contains(out.sql, "  CONSTRAINT `fk_items_order` FOREIGN KEY (`order_id`) REFERENCES `shop_archive`.`orders` "
                          "(`id`) ON DELETE CASCADE ON UPDATE NO ACTION\n)"));
  CHECK_FALSE(any_contains(out.dropped, "foreign key"));
}

TEST_CASE("ddl: foreign_key_checks = false keeps no foreign key, not even the parent's") {
  const char* in = "CREATE TABLE `order_items` (\n"
                   "  `id` int(11) NOT NULL,\n"
                   "  `order_id` int(11) NOT NULL,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  KEY `order_id` (`order_id`),\n"
                   "  CONSTRAINT `order_items_ibfk_1` FOREIGN KEY (`order_id`) REFERENCES `orders` (`id`)\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";
  auto rw = child_of("orders", {"order_id"});
  rw.foreign_key_checks = false;
  auto out = plan::destination_ddl(in, rw);
  CHECK_FALSE(contains(out.sql, "FOREIGN KEY"));
  CHECK_FALSE(contains(out.sql, "REFERENCES"));
  CHECK(contains(out.sql, "  KEY `order_id` (`order_id`)\n)"));  // the key's index stays, no trailing comma
  REQUIRE(out.dropped.size() == 1);
  CHECK(contains(out.dropped[0], "[destination] foreign_key_checks = false"));
}

TEST_CASE("ddl: foreign keys to another database, to a non-parent job table, on other columns are dropped") {
  const char* in = "CREATE TABLE `shipment_items` (\n"
                   "  `id` int(10) unsigned NOT NULL,\n"
                   "  `shipment_id` int(11) NOT NULL,\n"
                   "  `order_item_id` int(11) DEFAULT NULL,\n"
                   "  `r` int(11) DEFAULT NULL,\n"
                   "  `alt` int(11) DEFAULT NULL,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  CONSTRAINT `c_ibfk_1` FOREIGN KEY (`r`) REFERENCES `xq`.`r` (`id`),\n"
                   "  CONSTRAINT `c_ibfk_2` FOREIGN KEY (`order_item_id`) REFERENCES `order_items` (`id`),\n"
                   "  CONSTRAINT `c_ibfk_3` FOREIGN KEY (`alt`) REFERENCES `shipments` (`id`),\n"
                   "  CONSTRAINT `c_ibfk_4` FOREIGN KEY (`shipment_id`) REFERENCES `shipments` (`id`),\n"
                   "  CONSTRAINT `c_ibfk_5` FOREIGN KEY (`shipment_id`) REFERENCES `shop`.`shipments` (`id`)\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci";
  auto out = plan::destination_ddl(in, child_of("shipments", {"shipment_id"}));
  CHECK_FALSE(contains(out.sql, "c_ibfk_1"));
  CHECK_FALSE(contains(out.sql, "c_ibfk_2"));
  CHECK_FALSE(contains(out.sql, "c_ibfk_3"));
  CHECK(contains(out.sql, "CONSTRAINT `c_ibfk_4` FOREIGN KEY (`shipment_id`) REFERENCES `shop_archive`.`shipments` "
                          "(`id`),\n"));
  // The source database written out (as a fully qualified dump would) is still the source database.
  CHECK(contains(out.sql, "CONSTRAINT `c_ibfk_5` FOREIGN KEY (`shipment_id`) REFERENCES `shop_archive`.`shipments` "
                          "(`id`)\n)"));
  REQUIRE(out.dropped.size() == 3);
  CHECK(out.dropped[0] == "foreign key c_ibfk_1 (r) references xq.r: a table in another database");
  CHECK(out.dropped[1] == "foreign key c_ibfk_2 (order_item_id) references order_items: a table of the job, but not "
                          "this table's parent shipments in the tree");
  CHECK(out.dropped[2] == "foreign key c_ibfk_3 (alt) references shipments: the job's relation to shipments uses "
                          "foreign_key = (shipment_id)");
}

TEST_CASE("ddl: commas, quotes, keywords and parentheses inside strings, comments and names are not structure") {
  const char* in =
      "CREATE TABLE `we``ird, t` (\n"
      "  `id` int(10) unsigned NOT NULL AUTO_INCREMENT,\n"
      "  `a,b` enum('x,y','it''s','CONSTRAINT c FOREIGN KEY') NOT NULL DEFAULT 'x,y' COMMENT 'a, comment (with) "
      "FOREIGN KEY',\n"
      "  `o` int(11) DEFAULT NULL COMMENT 'AUTO_INCREMENT, ) REFERENCES `x`',\n"
      "  `p``q` int(11) DEFAULT NULL,\n"
      "  `g` int(11) GENERATED ALWAYS AS (`id` * 2) VIRTUAL,\n"
      "  `gs` varchar(20) GENERATED ALWAYS AS (concat(`a,b`,',')) STORED,\n"
      "  `inv` int(11) INVISIBLE DEFAULT 5,\n"
      "  `bs` varchar(9) DEFAULT 'q\\\\'' , x' COMMENT 'a\\\\b''c',\n"
      "  `txt` varchar(30) CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL,\n"
      "  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),\n"
      "  PRIMARY KEY (`id`),\n"
      "  UNIQUE KEY `uk` (`o`,`p``q`),\n"
      "  KEY `k_g` (`txt`(10)),\n"
      "  FULLTEXT KEY `ft` (`txt`),\n"
      "  CONSTRAINT `fk,o` FOREIGN KEY (`p``q`) REFERENCES `par``ent, x` (`id`) ON DELETE CASCADE,\n"
      "  CONSTRAINT `chk` CHECK (`o` > 0 or `o` is null)\n"
      ") ENGINE=InnoDB AUTO_INCREMENT=77 DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC "
      "COMMENT='t, AUTO_INCREMENT=5 PARTITION BY x'";
  auto out = plan::destination_ddl(in, child_of("par`ent, x", {"P`Q"}));
  CHECK(out.table == "we`ird, t");
  CHECK(out.sql ==
        "CREATE TABLE `shop_archive`.`we``ird, t` (\n"
        "  `id` int(10) unsigned NOT NULL,\n"
        "  `a,b` enum('x,y','it''s','CONSTRAINT c FOREIGN KEY') NOT NULL DEFAULT 'x,y' COMMENT 'a, comment (with) "
        "FOREIGN KEY',\n"
        "  `o` int(11) DEFAULT NULL COMMENT 'AUTO_INCREMENT, ) REFERENCES `x`',\n"
        "  `p``q` int(11) DEFAULT NULL,\n"
        "  `g` int(11) GENERATED ALWAYS AS (`id` * 2) VIRTUAL,\n"
        "  `gs` varchar(20) GENERATED ALWAYS AS (concat(`a,b`,',')) STORED,\n"
        "  `inv` int(11) INVISIBLE DEFAULT 5,\n"
        "  `bs` varchar(9) DEFAULT 'q\\\\'' , x' COMMENT 'a\\\\b''c',\n"
        "  `txt` varchar(30) CHARACTER SET latin1 COLLATE latin1_swedish_ci DEFAULT NULL,\n"
        "  `j` longtext CHARACTER SET utf8mb4 COLLATE utf8mb4_bin DEFAULT NULL CHECK (json_valid(`j`)),\n"
        "  PRIMARY KEY (`id`),\n"
        "  KEY `uk` (`o`,`p``q`),\n"
        "  KEY `k_g` (`txt`(10)),\n"
        "  FULLTEXT KEY `ft` (`txt`),\n"
        "  CONSTRAINT `fk,o` FOREIGN KEY (`p``q`) REFERENCES `shop_archive`.`par``ent, x` (`id`) ON DELETE CASCADE,\n"
        "  CONSTRAINT `chk` CHECK (`o` > 0 or `o` is null)\n"
        ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_ci ROW_FORMAT=DYNAMIC "
        "COMMENT='t, AUTO_INCREMENT=5 PARTITION BY x'");
  CHECK(out.dropped ==
        std::vector<std::string>{"the AUTO_INCREMENT attribute of column id",
                                 "the uniqueness of key uk (kept as a plain index): an archive keeps a value the "
                                 "source reuses",
                                 "the table option AUTO_INCREMENT=77"});
}

TEST_CASE("ddl: MariaDB partitioning is dropped up to the end of the statement") {
  const char* in = "CREATE TABLE `p` (\n"
                   "  `id` int(11) NOT NULL,\n"
                   "  `d` date NOT NULL,\n"
                   "  PRIMARY KEY (`id`,`d`)\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci\n"
                   " PARTITION BY RANGE (year(`d`))\n"
                   "(PARTITION `p0` VALUES LESS THAN (2020) ENGINE = InnoDB,\n"
                   " PARTITION `p1` VALUES LESS THAN MAXVALUE ENGINE = InnoDB)";
  auto out = plan::destination_ddl(in, root());
  CHECK(out.sql == "CREATE TABLE `shop_archive`.`p` (\n"
                   "  `id` int(11) NOT NULL,\n"
                   "  `d` date NOT NULL,\n"
                   "  PRIMARY KEY (`id`,`d`)\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci");
  CHECK(out.dropped == std::vector<std::string>{"the partitioning clause (PARTITION BY ...)"});
}

TEST_CASE("ddl: MySQL 8.0 output: version comments for partitions and tablespaces go, others stay") {
  const char* in = "CREATE TABLE `t` (\n"
                   "  `id` int NOT NULL AUTO_INCREMENT,\n"
                   "  `h` int DEFAULT NULL /*!80023 INVISIBLE */,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  CONSTRAINT `t_chk_1` CHECK ((`h` > 0)) /*!80016 NOT ENFORCED */\n"
                   ") /*!50100 TABLESPACE `ts1` */ ENGINE=InnoDB AUTO_INCREMENT=5 DEFAULT CHARSET=utf8mb4 "
                   "COLLATE=utf8mb4_0900_ai_ci DATA DIRECTORY='/var/lib/x/' INDEX DIRECTORY = '/var/lib/y/'\n"
                   "/*!50100 PARTITION BY HASH (`id`)\n"
                   "PARTITIONS 4 */";
  auto out = plan::destination_ddl(in, root());
  CHECK(out.sql == "CREATE TABLE `shop_archive`.`t` (\n"
                   "  `id` int NOT NULL,\n"
                   "  `h` int DEFAULT NULL /*!80023 INVISIBLE */,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  CONSTRAINT `t_chk_1` CHECK ((`h` > 0)) /*!80016 NOT ENFORCED */\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci");
  CHECK(out.dropped.size() == 6);
  CHECK(any_contains(out.dropped, "TABLESPACE"));
  CHECK(any_contains(out.dropped, "DATA DIRECTORY"));
  CHECK(any_contains(out.dropped, "INDEX DIRECTORY"));
  CHECK(any_contains(out.dropped, "partitioning"));
}

TEST_CASE("ddl: an unnamed foreign key and a foreign key with an index name") {
  const char* in = "CREATE TABLE `c` (\n"
                   "  `id` int(11) NOT NULL,\n"
                   "  `a` int(11) NOT NULL,\n"
                   "  `b` int(11) NOT NULL,\n"
                   "  PRIMARY KEY (`id`),\n"
                   "  FOREIGN KEY `ix` (`a`, `b`) REFERENCES `orders` (`x`, `y`),\n"
                   "  FOREIGN KEY (`b`) REFERENCES `customers` (`id`)\n"
                   ") ENGINE=InnoDB";
  auto out = plan::destination_ddl(in, child_of("orders", {"b", "a"}));
  CHECK(contains(out.sql, "  FOREIGN KEY `ix` (`a`, `b`) REFERENCES `shop_archive`.`orders` (`x`, `y`)\n)"));
  CHECK(out.dropped == std::vector<std::string>{"foreign key (b) references customers: not a table of the job"});
}

TEST_CASE("ddl: text that is not a CREATE TABLE it can read is refused") {
  auto rw = root();
  auto refused = [&](const char* text) {
    return goarchive::test::message_of<goarchive::Error>([&] { plan::destination_ddl(text, rw); });
  };
  CHECK(contains(refused("CREATE VIEW `v` AS SELECT 1"), "does not start with CREATE TABLE"));
  CHECK(contains(refused("CREATE TABLE t (id int)"), "no quoted table name"));
  CHECK(contains(refused("CREATE TABLE `t` (`id` int DEFAULT 'x)"), "string is not closed"));
  CHECK(contains(refused("CREATE TABLE `t (`id` int)"), "not closed"));
  CHECK(contains(refused("CREATE TABLE `t` (`id` int"), "parentheses do not balance"));
  CHECK(contains(refused("CREATE TABLE `t` (`id` int) /* x"), "comment is not closed"));
  CHECK(contains(refused("CREATE TABLE `t` ()"), "no columns"));
  CHECK(contains(refused("CREATE TABLE `t` (`a` int, FOREIGN KEY (`a`) `x`)"), "without REFERENCES"));
}

TEST_CASE("ddl: CREATE DATABASE IF NOT EXISTS with the source's defaults") {
  CHECK(plan::create_database_sql("shop_archive", "utf8mb4", "utf8mb4_unicode_ci") ==
        "CREATE DATABASE IF NOT EXISTS `shop_archive` DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci");
  CHECK(plan::create_database_sql("a`b", "", "") == "CREATE DATABASE IF NOT EXISTS `a``b`");
  CHECK(contains(goarchive::test::message_of<goarchive::Error>(
                     [] { plan::create_database_sql("d", "utf8mb4; DROP", ""); }),
                 "unexpected character set"));
}

TEST_CASE("ddl: commas inside type and key parentheses do not split; other table options stay as they are") {
  const char* in = "CREATE TABLE `v` (\n"
                   "  `id` int(11) NOT NULL,\n"
                   "  `amount` decimal(12,2) NOT NULL DEFAULT 0.00,\n"
                   "  `s` varchar(40) NOT NULL DEFAULT concat('a',',','b'),\n"
                   "  PRIMARY KEY (`id`,`amount`),\n"
                   "  KEY `k` (`s`(10),`amount`)\n"
                   ") ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci PAGE_COMPRESSED='ON' "
                   "`encrypted`=yes STATS_PERSISTENT=1 WITH SYSTEM VERSIONING";
  auto out = plan::destination_ddl(in, root());
  CHECK(out.sql == std::string("CREATE TABLE `shop_archive`.`v` (\n") + (in + std::string_view(in).find('\n') + 1));
  CHECK(out.dropped.empty());
}
