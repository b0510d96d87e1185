"""The test cluster's certificates: one CA, the API server's serving
certificate, the kubelet's, and client certificates (the node's, and an
administrator's that cnfperf, the controller manager, the scheduler, Multus
and the API server towards the kubelet present), and the service accounts'
signing key. Made with `cryptography` (paramiko's own dependency) at each
start: a cluster lives as long as the `cnfperf cluster` or test session
that started it, and so do its keys.
"""
from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

LIFETIME = datetime.timedelta(days=7)   # longer than any session; shorter than anything kept


@dataclass(frozen=True)
class Pair:
    cert: Path
    key: Path


def _name(cn: str, org: str | None = None) -> x509.Name:
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    if org:
        attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
    return x509.Name(attrs)


def _private(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    """The key in PEM, readable by its owner alone from the start."""
    path.touch(mode=0o600)
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
           ) -> Pair:
    pair = Pair(directory / f"{stem}.crt", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    _private(pair.key, key)
    return pair


class Authority:
    """A CA in `directory` (ca.crt, ca.key) that signs what issue() asks."""

    def __init__(self, directory: Path, load: bool = False):
        """A new CA in `directory`; with `load`, the one there (its
        certificates for another node: a second new one would void the
        running cluster's)."""
        self.directory = directory
        self.pair = Pair(directory / "ca.crt", directory / "ca.key")
        if load:
            self.cert = x509.load_pem_x509_certificate(self.pair.cert.read_bytes())
            key = serialization.load_pem_private_key(self.pair.key.read_bytes(), None)
            assert isinstance(key, ec.EllipticCurvePrivateKey), self.pair.key
            self.key, self.name = key, self.cert.subject
            return
        directory.mkdir(parents=True, exist_ok=True)
        self.key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        self.name = _name("cnfperf-cluster-ca")
        self.cert = (x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
                     .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
                     .not_valid_before(now - datetime.timedelta(minutes=5))
                     .not_valid_after(now + LIFETIME)
                     .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                     .add_extension(x509.KeyUsage(False, False, False, False, False, True, True,
                                                  False, False), critical=True)
                     .sign(self.key, hashes.SHA256()))
        self.pair = _write(directory, "ca", self.cert, self.key)

    def issue(self, stem: str, cn: str, org: str | None = None, server: bool = False,
              client: bool = False, hosts: tuple[str, ...] = ()) -> Pair:
        """A key and certificate `stem`.crt/.key for `cn` (in group `org`),
        for serving `hosts` (names or addresses) and/or as a client."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        usages = ([ExtendedKeyUsageOID.SERVER_AUTH] if server else []) + \
            ([ExtendedKeyUsageOID.CLIENT_AUTH] if client else [])
        builder = (x509.CertificateBuilder().subject_name(_name(cn, org)).issuer_name(self.name)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + LIFETIME)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(usages), critical=False))
        if hosts:
            names: list[x509.GeneralName] = []
            for host in hosts:
                try:
                    names.append(x509.IPAddress(ipaddress.ip_address(host)))
                except ValueError:
                    names.append(x509.DNSName(host))
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return _write(self.directory, stem, builder.sign(self.key, hashes.SHA256()), key)


def signing_key(directory: Path) -> Pair:
    """The service accounts' token signing key (sa.key) and its public half (sa.pub)."""
    key = ec.generate_private_key(ec.SECP256R1())
    pair = Pair(directory / "sa.pub", directory / "sa.key")
    _private(pair.key, key)
    pair.cert.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    return pair
