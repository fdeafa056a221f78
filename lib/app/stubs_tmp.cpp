#include "app/commands.h"
#include "util/error.h"
namespace goarchive::app {
int run_job(const config::Config&, const RunOptions&) { throw Error("todo"); }
int dry_run(const config::Config&, const RunOptions&, Format) { throw Error("todo"); }
int validate(const config::Config&, const std::optional<std::string>&, int, Format) { throw Error("todo"); }
int jobs_list(const config::Config&, Format) { throw Error("todo"); }
int jobs_clear(const config::Config&, const std::string&) { throw Error("todo"); }
int locks(const config::Config&, const std::string&) { throw Error("todo"); }
int discover(const config::Config&, const std::string&) { throw Error("todo"); }
}
