#include "test_certificates.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>
#include <vector>

#include "child_process.hpp"
#include "wall_clock.hpp"

namespace snowflake::test {

namespace {

void run(std::vector<std::string> argv) {
  const auto r = run_process(argv);
  if (r.status.code != 0) {
    std::string line;
    for (const auto& a : argv) line += a + " ";
    throw std::runtime_error("failed: " + line + "\n" + r.out + r.err);
  }
}

// P-256 keys: made in a millisecond, unlike RSA's.
const std::vector<std::string> kNewKey = {"-newkey", "ec", "-pkeyopt",
                                          "ec_paramgen_curve:prime256v1", "-nodes"};

}  // namespace

TestCertificates::TestCertificates(std::filesystem::path dir) : dir_(std::move(dir)) {}

CertificateFiles TestCertificates::make_ca(const std::string& name) const {
  CertificateFiles ca{dir_ / (name + ".pem"), dir_ / (name + ".key")};
  std::vector<std::string> argv{"/usr/bin/openssl", "req", "-x509"};
  argv.insert(argv.end(), kNewKey.begin(), kNewKey.end());
  argv.insert(argv.end(), {"-keyout", ca.key.string(), "-out", ca.cert.string(), "-days", "30",
                           "-subj", "/CN=" + name});
  run(argv);
  return ca;
}

CertificateFiles TestCertificates::sign(const std::string& name, const CertificateFiles& ca,
                                        const std::string& extensions, unsigned serial, int days,
                                        bool expired) const {
  CertificateFiles out{dir_ / (name + ".pem"), dir_ / (name + ".key")};
  const auto csr = dir_ / (name + ".csr");
  const auto ext = dir_ / (name + ".ext");
  std::ofstream(ext) << extensions;
  std::vector<std::string> argv{"/usr/bin/openssl", "req", "-new"};
  argv.insert(argv.end(), kNewKey.begin(), kNewKey.end());
  argv.insert(argv.end(),
              {"-keyout", out.key.string(), "-out", csr.string(), "-subj", "/CN=" + name});
  run(argv);
  std::vector<std::string> x509{"/usr/bin/openssl",
                                "x509",
                                "-req",
                                "-in",
                                csr.string(),
                                "-CA",
                                ca.cert.string(),
                                "-CAkey",
                                ca.key.string(),
                                "-set_serial",
                                std::to_string(serial),
                                "-days",
                                std::to_string(days),
                                "-out",
                                out.cert.string(),
                                "-extfile",
                                ext.string()};
  // Signed "in 2020": libfaketime moves the clock of that one command.
  if (expired) {
    sweep_faketime_leftovers();
    x509.insert(x509.begin(), {"/usr/bin/faketime", "2020-01-01 00:00:00"});
  }
  run(x509);
  return out;
}

CertificateFiles TestCertificates::make_server(const std::string& name, const CertificateFiles& ca,
                                               unsigned serial, int days, bool expired) const {
  return sign(name, ca,
              "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\n"
              "extendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n",
              serial, days, expired);
}

CertificateFiles TestCertificates::make_client(const std::string& name,
                                               const CertificateFiles& ca) const {
  return sign(name, ca, "extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n", 7, 30, false);
}

std::string serial_of(const std::filesystem::path& cert) {
  const auto r =
      run_process({"/usr/bin/openssl", "x509", "-in", cert.string(), "-noout", "-serial"});
  // "serial=1001\n"
  const auto eq = r.out.find('=');
  if (r.status.code != 0 || eq == std::string::npos) return "";
  return r.out.substr(eq + 1, r.out.find('\n') - eq - 1);
}

}  // namespace snowflake::test
