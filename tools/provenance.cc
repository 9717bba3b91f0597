#include "tools/provenance.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include <boost/uuid/detail/sha1.hpp>

#include "tools/cli.h"

namespace trainsim::cli {

std::string file_sha1(const std::string& path) {
  const std::string resolved = resolve_config_path(path);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(resolved, ec)) return "";  // a directory, or missing
  std::ifstream in(resolved, std::ios::binary);
  if (!in) return "";
  std::string bytes;
  try {
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception&) {
    return "";  // unreadable
  }
  boost::uuids::detail::sha1 hash;
  hash.process_bytes(bytes.data(), bytes.size());
  boost::uuids::detail::sha1::digest_type digest;
  hash.get_digest(digest);
  std::string hex;
  char word[9];
  for (const auto w : digest) {
    std::snprintf(word, sizeof word, "%08x", static_cast<unsigned>(w));
    hex += word;
  }
  return hex;
}

std::vector<ProvenanceFile> scenario_files(const models::Scenario& scenario) {
  std::vector<ProvenanceFile> files;
  const auto add = [&](const std::string& role, const std::string& path) {
    if (path.empty()) return;
    for (const ProvenanceFile& f : files) {
      if (f.path == path) return;
    }
    files.push_back({role, path, file_sha1(path)});
  };
  add("cluster", scenario.cluster.source_file);
  add("model", models::model_source_file(scenario.workload.model));
  if (scenario.workload.job) add("job", scenario.workload.job->source_file);
  if (const auto* recsys = std::get_if<models::RecsysModelSpec>(&scenario.workload.model)) {
    for (const auto& t : recsys->tables) add("histogram", t.access_file);
  }
  return files;
}

nlohmann::ordered_json provenance_json(const Provenance& p) {
  nlohmann::ordered_json j;
  j["command"] = p.command;
  j["arguments"] = p.arguments;
  j["seed"] = p.seed;
  j["settings"] = p.settings;
  auto& files = j["files"] = nlohmann::ordered_json::array();
  for (const ProvenanceFile& f : p.files) {
    files.push_back({{"role", f.role}, {"path", f.path}, {"sha1", f.sha1}});
  }
  if (!p.resolved.empty()) j["resolved"] = p.resolved;
  return j;
}

Provenance provenance_from_json(const nlohmann::json& j) {
  Provenance p;
  if (!j.is_object()) return p;
  p.command = j.value("command", std::string());
  if (j.contains("arguments") && j.at("arguments").is_array()) {
    for (const auto& a : j.at("arguments")) {
      if (a.is_string()) p.arguments.push_back(a.get<std::string>());
    }
  }
  if (j.contains("seed") && j.at("seed").is_number_unsigned()) {
    p.seed = j.at("seed").get<std::uint64_t>();
  }
  if (j.contains("settings") && j.at("settings").is_array()) {
    for (const auto& s : j.at("settings")) {
      if (s.is_string()) p.settings.push_back(s.get<std::string>());
    }
  }
  if (j.contains("files") && j.at("files").is_array()) {
    for (const auto& f : j.at("files")) {
      if (!f.is_object()) continue;
      p.files.push_back({f.value("role", std::string()), f.value("path", std::string()),
                         f.value("sha1", std::string())});
    }
  }
  p.resolved = j.value("resolved", std::string());
  return p;
}

}  // namespace trainsim::cli
