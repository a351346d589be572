// Host match: this host's fingerprint against a predictor's training environments.
#include "forecast/host_match.h"

#include <gtest/gtest.h>

#include "forecast/predictor.h"

namespace dnncast::forecast {
namespace {

// What data/predictors/amd-epyc-2cpu's manifests record (schema 2: no fingerprint).
records::EnvironmentRecord shipped_environment(int64_t threads) {
  records::EnvironmentRecord environment;
  environment.cpu_model = "AMD EPYC";
  environment.cores = 2;
  environment.threads = threads;
  environment.memory_bytes = 25276026880;
  environment.torch_version = "1.13.0";
  environment.build_type = "Release";
  return environment;
}

// An AVX2-only Zen 3 EPYC host: the same cpuinfo "model name" and cores.
records::EnvironmentRecord zen3_host() {
  records::EnvironmentRecord host = shipped_environment(2);
  host.memory_bytes = 25275883520;  // a few MiB otherwise: the same GiB
  host.cpu_vendor = "AuthenticAMD";
  host.cpu_family = 25;
  host.cpu_model_number = 1;
  host.cpu_stepping = 1;
  host.isa = "avx2";
  host.aten_capability = "avx2";
  host.l2_bytes = 512 << 10;
  host.l3_bytes = 32 << 20;
  return host;
}

const FieldDifference* find_field(const HostMatch& match, const std::string& field) {
  for (const FieldDifference& difference : match.differs)
    if (difference.field == field) return &difference;
  return nullptr;
}

TEST(HostMatch, UnrecordedIsaCountsAsAnAvx512Level) {
  std::vector<records::EnvironmentRecord> trained{shipped_environment(1), shipped_environment(2)};
  HostMatch avx2 = match_host(zen3_host(), trained);
  EXPECT_FALSE(avx2.exact);
  EXPECT_EQ(avx2.environment, trained[0].hash());  // a tie: the first
  ASSERT_FALSE(avx2.differs.empty());
  EXPECT_EQ(avx2.differs[0].field, "isa");  // the disagreement first
  EXPECT_EQ(avx2.differs[0].host, "avx2");
  EXPECT_EQ(avx2.differs[0].predictor, "(not recorded; an AVX-512 level, assumed avx512_core)");
  const FieldDifference* family = find_field(avx2, "cpu_family");
  ASSERT_NE(family, nullptr);
  EXPECT_EQ(family->host, "25");
  EXPECT_EQ(family->predictor, "not recorded");
  EXPECT_EQ(find_field(avx2, "cpu_model"), nullptr);  // agrees
  EXPECT_EQ(find_field(avx2, "memory_gib"), nullptr);

  // The AVX-512 host: every field both record agrees, and the ISA is the assumed one.
  records::EnvironmentRecord avx512 = zen3_host();
  avx512.isa = "avx512_core";
  HostMatch exact = match_host(avx512, trained);
  EXPECT_TRUE(exact.exact);
  EXPECT_TRUE(exact.differs.empty());
  EXPECT_EQ(exact.to_json()["match"], "exact");
  // Any AVX-512 level: the unrecorded environment's peaks say AVX-512, not which level (a Zen 4
  // EPYC dispatches to avx512_core_bf16).
  avx512.isa = "avx512_core_bf16";
  EXPECT_TRUE(match_host(avx512, trained).exact);
  records::EnvironmentRecord recorded = shipped_environment(1);
  recorded.isa = "avx512_core";  // a recorded level is compared as it is
  EXPECT_FALSE(match_host(avx512, {recorded}).exact);
}

TEST(HostMatch, NearestHasTheFewestDifferingFields) {
  records::EnvironmentRecord host = zen3_host();
  records::EnvironmentRecord far = zen3_host();  // another CPU, other caches
  far.cpu_family = 23;
  far.cpu_model_number = 49;
  far.l3_bytes = 16 << 20;
  far.isa = "avx2";
  records::EnvironmentRecord near = zen3_host();  // another stepping of this CPU
  near.cpu_stepping = 0;
  std::vector<records::EnvironmentRecord> trained{far, near};
  HostMatch match = match_host(host, trained);
  EXPECT_FALSE(match.exact);
  EXPECT_EQ(match.environment, near.hash());
  ASSERT_EQ(match.differs.size(), 1u);
  EXPECT_EQ(match.differs[0].field, "cpu_stepping");
  EXPECT_EQ(match.differs[0].host, "1");
  EXPECT_EQ(match.differs[0].predictor, "0");
  nlohmann::json document = match.to_json();
  EXPECT_EQ(document["match"], "nearest");
  EXPECT_EQ(document["environment"], near.hash());
  EXPECT_EQ(document["differs"][0]["field"], "cpu_stepping");

  trained.push_back(zen3_host());  // the host itself: exact
  HostMatch exact = match_host(host, trained);
  EXPECT_TRUE(exact.exact);
  EXPECT_EQ(exact.environment, zen3_host().hash());
}

TEST(HostMatch, NoteNamesTheFieldsTheEnvironmentAndTheRemedy) {
  HostMatch match = match_host(zen3_host(), {shipped_environment(1)});
  match.remedy = calibrate_remedy("", "resnet50", 32, "3x224x224");
  std::string note = host_match_note(match);
  EXPECT_EQ(note.find('\n'), std::string::npos) << note;
  EXPECT_EQ(
      note.rfind(
          "no predictor was trained on this host (isa avx2 vs (not recorded; an AVX-512 level, assumed avx512_core), ",
          0),
      0u)
      << note;
  EXPECT_NE(note.find("cpu_family 25, cpu_model_number 1"), std::string::npos) << note;
  EXPECT_NE(note.find("using the nearest, environment " + shipped_environment(1).hash()), std::string::npos) << note;
  EXPECT_NE(
      note.find("To adapt it: dnncast calibrate resnet50 --batch 32 --input 3x224x224 --minutes 5 (5 minutes of this "
                "host's time"),
      std::string::npos)
      << note;
  // A predictor the user named, and a file name the shell must read back as one word.
  EXPECT_EQ(calibrate_remedy("my sets/x", "m y.onnx", 8, "128")
                .rfind("dnncast calibrate 'm y.onnx' --batch 8 --seq 128 --predictor 'my sets/x' --minutes 5 (", 0),
            0u);
}

TEST(HostMatch, IsaAloneForTheSimulator) {
  std::vector<records::EnvironmentRecord> trained{shipped_environment(1)};
  EXPECT_TRUE(match_isa("avx512_core", trained).exact);
  HostMatch avx2 = match_isa("avx2", trained);
  EXPECT_FALSE(avx2.exact);
  ASSERT_EQ(avx2.differs.size(), 1u);
  EXPECT_EQ(avx2.differs[0].field, "isa");
  records::EnvironmentRecord recorded = shipped_environment(1);
  recorded.isa = "avx2";
  EXPECT_TRUE(match_isa("avx2", {recorded}).exact);
}

TEST(HostMatch, HostEnvironmentFollowsAStatedIsa) {
  records::EnvironmentRecord stated = host_environment(hardware::CpuIsa::Avx512Core);
  EXPECT_EQ(stated.isa, "avx512_core");
  EXPECT_EQ(stated.aten_capability, "avx512");
  records::EnvironmentRecord avx2 = host_environment(hardware::CpuIsa::Avx2);
  EXPECT_EQ(avx2.isa, "avx2");
  EXPECT_EQ(avx2.aten_capability, "avx2");
  EXPECT_EQ(avx2.cpu_model, stated.cpu_model);  // the rest is this host's
  EXPECT_EQ(avx2.cores, stated.cores);
}

TEST(HostMatch, ManifestEnvironmentsOfTheShippedPredictor) {
  std::string root = default_predictor_root();
  ASSERT_FALSE(root.empty());
  std::vector<records::EnvironmentRecord> environments = manifest_environments(root + "/amd-epyc-2cpu");
  ASSERT_EQ(environments.size(), 2u);
  EXPECT_EQ(environments[0].hash(), "0e36ffec1c422972");  // as the manifest states it: still valid
  EXPECT_TRUE(environments[0].isa.empty());
  EXPECT_TRUE(manifest_environments(root + "/absent").empty());
}

}  // namespace
}  // namespace dnncast::forecast
