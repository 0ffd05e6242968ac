#pragma once
// Certificates for the TLS tests, made by the openssl command line as an
// operator would make them: CAs, server certificates for 127.0.0.1, ::1 and
// localhost (subjectAltName), client certificates, expired ones (signed
// under faketime, in the past).

#include <filesystem>
#include <string>

namespace snowflake::test {

struct CertificateFiles {
  std::filesystem::path cert;  // PEM
  std::filesystem::path key;   // PEM, unencrypted
};

class TestCertificates {
 public:
  // Everything is written into `dir`, which must exist.
  explicit TestCertificates(std::filesystem::path dir);

  // A self-signed CA: <name>.pem, <name>.key.
  CertificateFiles make_ca(const std::string& name) const;
  // A server certificate for 127.0.0.1, ::1 and localhost that `ca` signs,
  // with the serial number given (so that a test can tell two apart),
  // valid from now for `days`; `expired`: valid for 30 days from 2020-01-01.
  CertificateFiles make_server(const std::string& name, const CertificateFiles& ca, unsigned serial,
                               int days = 30, bool expired = false) const;
  // A client certificate (extendedKeyUsage clientAuth) that `ca` signs.
  CertificateFiles make_client(const std::string& name, const CertificateFiles& ca) const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  CertificateFiles sign(const std::string& name, const CertificateFiles& ca,
                        const std::string& extensions, unsigned serial, int days,
                        bool expired) const;

  std::filesystem::path dir_;
};

// The serial number of the certificate in a PEM file, in upper-case hex as
// OpenSSL prints it ("1001").
std::string serial_of(const std::filesystem::path& cert);

}  // namespace snowflake::test
