#!/usr/bin/env bash
# Makes a TEST certificate authority and the certificates of the shipped deployment:
# one server certificate for every NATS node (client and route connections) and one
# client certificate per role. NATS maps each client certificate to its user
# (verify_and_map): the certificate IS the credential, so keep the *-key.pem files secret.
#
#   deployments/tls/make-test-certs.sh [OUT_DIR]      (default: deployments/tls/certs)
#
# Environment:
#   NAMESPACE   Kubernetes namespace of the NATS release (default: default)
#   RELEASE     name of the official NATS chart's release (default: nats)
#   EXTRA_SANS  more server names, comma-separated: DNS names or IP addresses
#   DAYS        validity in days (default: 365)
#   KEY_MODE    file mode of the *-key.pem files (default: 600; compose.yaml needs 644, since
#               its containers' non-root users read bind-mounted keys: test keys only)
#
# Files written (PEM):
#   ca.pem ca-key.pem                 the test CA (keep ca-key.pem offline, or delete it)
#   server.pem server-key.pem         NATS nodes: serverAuth and clientAuth (routes are mutual TLS)
#   carddrift.pem carddrift-key.pem   CN=carddrift,O=carddrift    the workers (carddrift serve)
#   client.pem client-key.pem         CN=a2a-client,O=carddrift   A2A clients: publish a2a.task.> only
#   planner.pem planner-key.pem       CN=planner,O=carddrift      planners: read card.> only
#   admin.pem admin-key.pem           CN=nats-admin,O=carddrift   the system account (nats server report, …)
#
# These are test certificates: for production use your own CA (cert-manager, Vault, …) and
# keep the subjects above, since they are the user names in deployments/nats/accounts.conf.
# Needs openssl.
set -euo pipefail

out=${1:-"$(dirname "$0")/certs"}
ns=${NAMESPACE:-default}
rel=${RELEASE:-nats}
days=${DAYS:-365}
mkdir -p "$out"
cd "$out"
umask 077

sans="DNS:localhost,IP:127.0.0.1,IP:::1"
# compose service names
sans+=",DNS:nats-1,DNS:nats-2,DNS:nats-3"
# the official NATS chart: client service, headless service and its pods
for n in "$rel" "*.$rel-headless"; do
  sans+=",DNS:$n,DNS:$n.$ns,DNS:$n.$ns.svc,DNS:$n.$ns.svc.cluster.local"
done
sans+=",DNS:$rel-headless,DNS:$rel-headless.$ns.svc.cluster.local"
if [ -n "${EXTRA_SANS:-}" ]; then
  IFS=, read -ra extra <<<"$EXTRA_SANS"
  for s in "${extra[@]}"; do
    if [[ "$s" =~ ^[0-9.]+$ || "$s" == *:* ]]; then sans+=",IP:$s"; else sans+=",DNS:$s"; fi
  done
fi

key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }

# The CA.
key ca-key.pem
openssl req -x509 -new -key ca-key.pem -sha256 -days "$days" -subj "/O=carddrift/CN=carddrift test CA" \
  -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" -out ca.pem

# sign NAME SUBJECT EXTENSIONS
sign() {
  local name=$1 subj=$2 ext=$3
  key "$name-key.pem"
  openssl req -new -key "$name-key.pem" -subj "$subj" -out "$name.csr"
  printf '%b\n' "$ext" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca-key.pem -CAcreateserial -sha256 \
    -days "$days" -extfile "$name.ext" -out "$name.pem" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

sign server "/O=carddrift/CN=nats" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=$sans"
client_ext="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth"
sign carddrift "/O=carddrift/CN=carddrift" "$client_ext"
sign client "/O=carddrift/CN=a2a-client" "$client_ext"
sign planner "/O=carddrift/CN=planner" "$client_ext"
sign admin "/O=carddrift/CN=nats-admin" "$client_ext"
rm -f ca.srl
# Public parts readable by the containers' non-root users; keys stay 0600 (mount them
# with the right owner, or as Kubernetes secrets).
chmod 644 ./*.pem
chmod "${KEY_MODE:-600}" ./*-key.pem
echo "test certificates in $(pwd): ca.pem, server.pem, carddrift.pem, client.pem, planner.pem, admin.pem (+ *-key.pem)"
