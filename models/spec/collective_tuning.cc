#include "models/spec/collective_tuning.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace trainsim::models {

const EnumNames<Protocol>& protocol_names() {
  static const EnumNames<Protocol> names = {
      {Protocol::kLl, "ll"}, {Protocol::kLl128, "ll128"}, {Protocol::kSimple, "simple"}};
  return names;
}

std::string_view protocol_name(Protocol protocol) { return protocol_names().name(protocol); }
std::optional<Protocol> parse_protocol(std::string_view name) {
  return protocol_names().parse(name);
}
const std::vector<Protocol>& all_protocols() { return protocol_names().values(); }

const EnumNames<Algorithm>& algorithm_names() {
  // After the names: NCCL_ALGO's spellings without underscores, and PXN for the 2D all-to-all.
  static const EnumNames<Algorithm> names = {{Algorithm::kRing, "ring"},
                                             {Algorithm::kTree, "tree"},
                                             {Algorithm::kNvls, "nvls"},
                                             {Algorithm::kNvlsTree, "nvls_tree"},
                                             {Algorithm::kCollNetDirect, "collnet_direct"},
                                             {Algorithm::kCollNetChain, "collnet_chain"},
                                             {Algorithm::kPat, "pat"},
                                             {Algorithm::kHierarchical, "hierarchical"},
                                             {Algorithm::kDirect, "direct"},
                                             {Algorithm::kTwoD, "2d"},
                                             {Algorithm::kP2p, "p2p"},
                                             {Algorithm::kNvlsTree, "nvlstree"},
                                             {Algorithm::kCollNetDirect, "collnetdirect"},
                                             {Algorithm::kCollNetChain, "collnetchain"},
                                             {Algorithm::kTwoD, "pxn"}};
  return names;
}

std::string_view algorithm_name(Algorithm algorithm) { return algorithm_names().name(algorithm); }
std::optional<Algorithm> parse_algorithm(std::string_view name) {
  return algorithm_names().parse(name);
}
const std::vector<Algorithm>& all_algorithms() { return algorithm_names().values(); }

bool is_nccl_algorithm(Algorithm algorithm) {
  return algorithm <= Algorithm::kPat;
}

std::string nccl_version_name(NcclVersion version) {
  return "2." + std::to_string(version.minor);
}

std::optional<NcclVersion> parse_nccl_version(std::string_view text) {
  const char* end = text.data() + text.size();
  int major = 0;
  auto r = std::from_chars(text.data(), end, major);
  if (r.ec != std::errc()) return std::nullopt;
  if (r.ptr == end && major >= 20000 && major < 30000) {
    return NcclVersion{(major / 100) % 100};  // NCCL_VERSION_CODE: 22602 is 2.26.2
  }
  if (r.ptr == end || *r.ptr != '.' || major != 2) return std::nullopt;
  int minor = 0;
  r = std::from_chars(r.ptr + 1, end, minor);
  if (r.ec != std::errc() || minor < 0 || minor > 99) return std::nullopt;
  if (r.ptr != end && *r.ptr != '.') return std::nullopt;
  return NcclVersion{minor};
}

bool CollectiveTuning::allows(Algorithm a) const {
  return algorithms.empty() || std::find(algorithms.begin(), algorithms.end(), a) != algorithms.end();
}

bool CollectiveTuning::allows(Protocol p) const {
  return protocols.empty() || std::find(protocols.begin(), protocols.end(), p) != protocols.end();
}

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// Comma-separated names, NCCL style ("Ring,Tree", "^LL128" excludes).
template <typename T, typename Parse>
std::string parse_list(std::string_view value, const std::vector<T>& universe, Parse parse,
                       std::vector<T>& out, std::string_view what) {
  bool exclude = !value.empty() && value.front() == '^';
  if (exclude) value.remove_prefix(1);
  std::vector<T> named;
  while (!value.empty()) {
    const auto comma = value.find(',');
    const std::string item = lower(value.substr(0, comma));
    const auto parsed = parse(item);
    if (!parsed) return "unknown " + std::string(what) + " '" + item + "'";
    named.push_back(*parsed);
    value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
  }
  out.clear();
  for (const T& t : universe) {
    const bool listed = std::find(named.begin(), named.end(), t) != named.end();
    if (listed != exclude) out.push_back(t);
  }
  if (out.empty()) return "leaves no " + std::string(what);
  return "";
}

std::optional<int> parse_int(std::string_view value) {
  int v = 0;
  const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
  if (r.ec != std::errc() || r.ptr != value.data() + value.size()) return std::nullopt;
  return v;
}

}  // namespace

std::string apply_nccl_env(CollectiveTuning& tuning, std::string_view name,
                           std::string_view value) {
  auto integer = [&](int& field, int least) -> std::string {
    const auto v = parse_int(value);
    if (!v || *v < least) {
      return std::string(name) + " must be an integer of at least " + std::to_string(least);
    }
    field = *v;
    return "";
  };
  auto flag = [&](bool& field, bool invert) -> std::string {
    const auto v = parse_int(value);
    if (!v || *v < 0) return std::string(name) + " must be a non-negative integer (0: off)";
    field = (*v != 0) != invert;
    return "";
  };
  if (name == "NCCL_ALGO") {
    // NCCL's collective algorithms: "^Tree" leaves the others of these, none of trainsim's own
    // (hierarchical) nor the point-to-point forms, which NCCL_ALGO does not select.
    static const std::vector<Algorithm> nccl = [] {
      std::vector<Algorithm> v;
      for (const Algorithm a : all_algorithms()) {
        if (is_nccl_algorithm(a)) v.push_back(a);
      }
      return v;
    }();
    return parse_list<Algorithm>(
        value, nccl,
        [](const std::string& s) {
          auto a = parse_algorithm(s);
          return a && is_nccl_algorithm(*a) ? a : std::nullopt;
        },
        tuning.algorithms, "algorithm");
  }
  if (name == "NCCL_PROTO") {
    return parse_list<Protocol>(value, all_protocols(), parse_protocol, tuning.protocols,
                                "protocol");
  }
  if (name == "NCCL_MIN_NCHANNELS" || name == "NCCL_MIN_CTAS") {
    return integer(tuning.min_channels, 1);
  }
  if (name == "NCCL_MAX_NCHANNELS" || name == "NCCL_MAX_CTAS") {
    return integer(tuning.max_channels, 1);
  }
  if (name == "NCCL_NCHANNELS_PER_NET_PEER") return integer(tuning.channels_per_net_peer, 1);
  if (name == "NCCL_IB_QPS_PER_CONNECTION") return integer(tuning.ib_qps_per_connection, 1);
  if (name == "NCCL_PXN_DISABLE") return flag(tuning.pxn, /*invert=*/true);
  if (name == "NCCL_NVLS_ENABLE") return flag(tuning.nvls, false);
  if (name == "NCCL_COLLNET_ENABLE") return flag(tuning.collnet, false);
  if (name.substr(0, 5) != "NCCL_") return std::string(name) + " is not an NCCL variable";
  return "";  // NCCL_IB_HCA, NCCL_DEBUG, NCCL_SOCKET_IFNAME, ...: no effect on the model
}

std::vector<std::pair<std::string, std::string>> nccl_env_of(const CollectiveTuning& t) {
  std::vector<std::pair<std::string, std::string>> env;
  auto join = [](const auto& items, auto name) {
    std::string s;
    for (const auto& i : items) s += (s.empty() ? "" : ",") + std::string(name(i));
    return s;
  };
  if (!t.algorithms.empty()) {
    env.emplace_back("NCCL_ALGO", join(t.algorithms, [](Algorithm a) { return algorithm_name(a); }));
  }
  if (!t.protocols.empty()) {
    env.emplace_back("NCCL_PROTO", join(t.protocols, [](Protocol p) { return protocol_name(p); }));
  }
  if (t.min_channels > 0) env.emplace_back("NCCL_MIN_NCHANNELS", std::to_string(t.min_channels));
  if (t.max_channels > 0) env.emplace_back("NCCL_MAX_NCHANNELS", std::to_string(t.max_channels));
  if (t.channels_per_net_peer > 0) {
    env.emplace_back("NCCL_NCHANNELS_PER_NET_PEER", std::to_string(t.channels_per_net_peer));
  }
  if (t.ib_qps_per_connection != 1) {
    env.emplace_back("NCCL_IB_QPS_PER_CONNECTION", std::to_string(t.ib_qps_per_connection));
  }
  if (!t.pxn) env.emplace_back("NCCL_PXN_DISABLE", "1");
  if (!t.nvls) env.emplace_back("NCCL_NVLS_ENABLE", "0");
  if (!t.collnet) env.emplace_back("NCCL_COLLNET_ENABLE", "0");
  return env;
}

}  // namespace trainsim::models
