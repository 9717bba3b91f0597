// The table-driven reader, writer and documentation, on a small spec whose every figure is worked
// by hand; and every key the shipped configs use is documented.
#include "models/config/param_table.h"

#include <filesystem>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "models/config/param_doc.h"

namespace trainsim::models {
namespace {

struct Toy {
  std::string name;
  std::string source_file;
  double bandwidth = 0;   // link.bandwidth, required
  double efficiency = 1;  // link.efficiency
  Time latency = 0;       // link.latency
  int count = 0;          // 0: unset
  bool fancy = false;
  int extra = 2;  // only with fancy: true
};

const ParamTable<Toy>& toy_table() {
  using P = Params<Toy>;
  static const ParamTable<Toy> table = [] {
    Param<Toy> name = P::text({.key = "name", .help = "its name"},
                              [](auto& s) -> auto& { return s.name; });
    name.required = true;
    Param<Toy> link = P::section({.key = "link", .help = "a link"});
    link.required = true;
    Param<Toy> bandwidth = P::quantity({.key = "link.bandwidth", .help = "line rate"},
                                       Dimension::kBandwidth, WriteUnit{1e9, "GB/s"},
                                       [](auto& s) -> auto& { return s.bandwidth; });
    bandwidth.required = true;
    Param<Toy> extra = P::whole({.key = "extra", .help = "more"},
                                [](auto& s) -> auto& { return s.extra; });
    extra.applies = [](const Toy& t) { return t.fancy; };
    extra.doc.applies = "fancy: true";
    return ParamTable<Toy>(
        "Toy", {name, link, bandwidth,
                P::fraction({.key = "link.efficiency", .help = "achieved share"},
                            [](auto& s) -> auto& { return s.efficiency; }),
                P::time({.key = "link.latency", .help = "latency"}, WriteUnit{1e-6, "us"},
                        [](auto& s) -> auto& { return s.latency; }),
                P::whole({.key = "count", .help = "how many"},
                         [](auto& s) -> auto& { return s.count; }, 1, 8),
                P::flag({.key = "fancy", .help = "fancy"}, [](auto& s) -> auto& { return s.fancy; }),
                extra},
        Toy{});
  }();
  return table;
}

Toy read(const std::string& yaml) {
  return toy_table().load(ConfigNode::load_string(yaml, "toy.yaml"));
}

ConfigError error_of(const std::string& yaml) {
  try {
    read(yaml);
  } catch (const ConfigError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << yaml;
  return ConfigError("", 0, 0, "", "");
}

TEST(ParamTableTest, ReadsEachKindOfKeyInItsUnit) {
  const Toy t = read("name: a\nlink: {bandwidth: 400 Gb/s, latency: 2.5 us}\ncount: 3\n");
  EXPECT_EQ(t.name, "a");
  EXPECT_EQ(t.source_file, "toy.yaml");
  EXPECT_DOUBLE_EQ(t.bandwidth, 50e9);  // 400 Gb/s = 400e9 / 8 B/s
  EXPECT_EQ(t.latency, 2500 * kNanosecond);
  EXPECT_DOUBLE_EQ(t.efficiency, 1.0);  // the struct's default
  EXPECT_EQ(t.count, 3);
  EXPECT_EQ(t.extra, 2);
}

TEST(ParamTableTest, MissingRequiredKeyNamesItsPath) {
  const ConfigError e = error_of("name: a\nlink: {latency: 1 us}\n");
  EXPECT_EQ(e.key_path(), "link.bandwidth");
  EXPECT_NE(e.message().find("missing required key"), std::string::npos) << e.message();
  EXPECT_EQ(error_of("name: a\n").key_path(), "link");
}

TEST(ParamTableTest, KeyThatDoesNotApplyIsRejectedWhereItIs) {
  const ConfigError e = error_of("name: a\nlink: {bandwidth: 1 GB/s}\nextra: 4\n");
  EXPECT_EQ(e.key_path(), "extra");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.message().find("applies only to fancy: true"), std::string::npos) << e.message();
  EXPECT_EQ(read("name: a\nlink: {bandwidth: 1 GB/s}\nfancy: true\nextra: 4\n").extra, 4);
}

TEST(ParamTableTest, RangesAndUnknownKeysAreErrors) {
  const std::string base = "name: a\nlink: {bandwidth: 1 GB/s}\n";
  EXPECT_NE(error_of(base + "count: 9\n").message().find("must be at most 8"), std::string::npos);
  EXPECT_NE(error_of(base + "count: 0\n").message().find("positive whole number"),
            std::string::npos);
  // A whole number the field (an int) cannot hold is refused, not wrapped: 2^32 + 8 would be 8.
  const ConfigError wide = error_of(base + "fancy: true\nextra: 4294967304\n");
  EXPECT_NE(wide.message().find("must be at most 2147483647, got '4294967304'"),
            std::string::npos)
      << wide.message();
  EXPECT_NE(error_of("name: a\nlink: {bandwidth: 1 GB/s, efficiency: 1.5}\n")
                .message()
                .find("fraction in (0, 1]"),
            std::string::npos);
  // A quantity outside its dimension's bounds: a bandwidth below 1 MB/s (a unit forgotten) or
  // above 10 PB/s cannot be simulated (a transfer would outlast the clock).
  const ConfigError tiny = error_of("name: a\nlink: {bandwidth: 1e-300}\n");
  EXPECT_EQ(tiny.key_path(), "link.bandwidth");
  EXPECT_NE(tiny.message().find("is too small: at least 1 MB/s (a unit forgotten?), got '1e-300'"),
            std::string::npos)
      << tiny.message();
  EXPECT_NE(error_of("name: a\nlink: {bandwidth: 1e20 GB/s}\n").message().find("at most 10 PB/s"),
            std::string::npos);
  const ConfigError unknown = error_of(base + "cuont: 3\n");
  EXPECT_NE(unknown.message().find("did you mean 'count'"), std::string::npos)
      << unknown.message();
}

TEST(ParamTableTest, WriterWritesEveryKeyWithADefaultAndLeavesUnsetOnesOut) {
  Toy t = read("name: a\nlink: {bandwidth: 400 Gb/s}\n");
  YAML::Emitter out;
  toy_table().write(out, t, {{"link.bandwidth", "measured"}});
  // count is unset (0) and extra does not apply (fancy: false); the rest is written, in the
  // table's order and each in its unit.
  EXPECT_EQ(std::string(out.c_str()),
            "name: a\nlink:\n  bandwidth: 50 GB/s  # measured\n  efficiency: 1\n  latency: 0 us\n"
            "fancy: false");
  t.fancy = true;
  t.count = 8;
  YAML::Emitter again;
  toy_table().write(again, t);
  const Toy back = read(again.c_str());
  EXPECT_EQ(back.count, 8);
  EXPECT_EQ(back.extra, 2);
  EXPECT_TRUE(back.fancy);
}

TEST(ParamTableTest, DocumentationTakesDefaultsFromTheSpec) {
  const ParamTableDoc doc = toy_table().doc();
  ASSERT_EQ(doc.params.size(), 8u);
  const auto find = [&doc](const std::string& key) {
    for (const ParamDoc& p : doc.params) {
      if (p.key == key) return p;
    }
    ADD_FAILURE() << key;
    return ParamDoc{};
  };
  EXPECT_EQ(find("name").default_text, "required");
  EXPECT_EQ(find("link.bandwidth").type, "bandwidth (GB/s)");
  EXPECT_EQ(find("link.bandwidth").range, "1 MB/s to 10 PB/s");  // a bandwidth's bounds
  EXPECT_EQ(find("link.efficiency").default_text, "1");
  EXPECT_EQ(find("link.efficiency").range, "(0, 1]");
  EXPECT_EQ(find("link.latency").default_text, "0 us");
  EXPECT_EQ(find("count").default_text, "unset");
  EXPECT_EQ(find("count").range, "> 0, at most 8");
  EXPECT_EQ(find("extra").applies, "fancy: true");
}

// Key paths of a YAML file: maps descend, a list of maps descends as `key[]`, and a documented
// map or list is a leaf (its own reader checks what is inside).
void collect_paths(const YAML::Node& node, const std::string& prefix, std::set<std::string>& out) {
  if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string key = (prefix.empty() ? "" : prefix + ".") + entry.first.as<std::string>();
      out.insert(key);
      collect_paths(entry.second, key, out);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) {
      if (item.IsMap()) collect_paths(item, prefix + "[]", out);
    }
  }
}

TEST(ParamDocTest, EveryKeyOfTheShippedConfigsIsDocumented) {
  const std::string root = TRAINSIM_SOURCE_DIR;
  std::set<std::string> documented;
  std::set<std::string> leaves;  // maps and lists read as a whole
  for (const std::string& topic : config_topics()) {
    for (const ParamTableDoc& table : describe_config(topic)) {
      for (const ParamDoc& p : table.params) {
        documented.insert(p.key);
        if (p.type != "section") leaves.insert(p.key);
      }
    }
  }
  int files = 0;
  for (const char* dir : {"clusters", "models", "jobs", "sweeps"}) {
    for (const auto& entry : std::filesystem::directory_iterator(root + "/configs/" + dir)) {
      if (entry.path().extension() != ".yaml") continue;
      ++files;
      std::set<std::string> paths;
      collect_paths(YAML::LoadFile(entry.path().string()), "", paths);
      for (const std::string& path : paths) {
        bool inside_leaf = false;
        for (const std::string& leaf : leaves) {
          inside_leaf = inside_leaf || (path.size() > leaf.size() && path.rfind(leaf, 0) == 0 &&
                                        (path[leaf.size()] == '.' ||
                                         (path[leaf.size()] == '[' && !documented.count(path))));
        }
        EXPECT_TRUE(documented.count(path) || inside_leaf) << entry.path() << ": " << path;
      }
    }
  }
  EXPECT_GE(files, 10);
}

}  // namespace
}  // namespace trainsim::models
