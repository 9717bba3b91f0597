// `trainsim describe [cluster|model|job|sweep|placement]`: every key a config file takes, with its
// type, allowed values, default, meaning and the source of its default, from the tables the
// readers run.
#include <boost/program_options.hpp>

#include "models/config/param_doc.h"
#include "tools/cli.h"

namespace trainsim::cli {

namespace po = boost::program_options;

int run_describe(const std::vector<std::string>& args, std::ostream& out, std::ostream&) {
  po::options_description options("describe options");
  options.add_options()("help,h", "show this help")(
      "markdown", po::bool_switch(), "print Markdown tables (as configs/README.md shows them)");
  const auto vm = parse_options(args, options, "describe", "topic");
  std::string topics;
  for (const std::string& t : models::config_topics()) topics += (topics.empty() ? "" : "|") + t;
  if (vm.count("help")) {
    out << "usage: trainsim describe [" << topics << "] [--markdown]\n\n"
        << "Lists every key of a config file: type and unit, allowed values, default, meaning,\n"
        << "and where a default comes from. Without a topic: every kind of file.\n\n"
        << options;
    return kExitOk;
  }
  std::vector<std::string> chosen = models::config_topics();
  if (vm.count("topic")) {
    const std::string topic = vm["topic"].as<std::string>();
    if (models::describe_config(topic).empty()) {
      throw UsageError("describe: unknown topic '" + topic + "' (" + topics + ")");
    }
    chosen = {topic};
  }
  const bool markdown = vm["markdown"].as<bool>();
  bool first = true;
  for (const std::string& topic : chosen) {
    for (const models::ParamTableDoc& table : models::describe_config(topic)) {
      if (!first) out << "\n";
      first = false;
      if (markdown) {
        out << "### " << table.title << "\n\n" << models::format_param_markdown(table);
      } else {
        out << models::format_param_text(table);
      }
    }
  }
  return kExitOk;
}

}  // namespace trainsim::cli
