#!/usr/bin/env bash
# Makes TEST certificate authorities and the certificates of the shipped deployment: one
# server certificate for every NATS node's client port, one client certificate per role,
# and, from a second CA that signs nothing else, the route certificate the NATS nodes
# present to each other. NATS maps each client certificate to its user (verify_and_map):
# the certificate IS the credential, so keep the *-key.pem files secret.
#
# Two CAs: the cluster port trusts only route-ca.pem, and the route certificate's subject
# is the one route user (nats-{1,2,3}.conf, cluster authorization), so no certificate a
# client, planner, worker or operator holds can join the cluster as a route.
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
#   ca.pem ca-key.pem                 the clients' test CA (keep ca-key.pem offline, or delete it)
#   server.pem server-key.pem         NATS nodes' client port (4222): serverAuth only
#   route-ca.pem route-ca-key.pem     the routes' test CA: signs route.pem and nothing else
#   route.pem route-key.pem           CN=nats-route,O=carddrift   NATS nodes' cluster port (6222):
#                                     serverAuth and clientAuth (routes are mutual TLS); only
#                                     the NATS nodes hold it
#   carddrift.pem carddrift-key.pem   CN=carddrift,O=carddrift    the workers (carddrift serve)
#   client.pem client-key.pem         CN=a2a-client,O=carddrift   A2A clients: publish a2a.task.> only
#   planner.pem planner-key.pem       CN=planner,O=carddrift      planners: read card.> only
#   admin.pem admin-key.pem           CN=nats-admin,O=carddrift   the system account (nats server report, …)
#   planners-admin.pem planners-admin-key.pem  CN=planners-admin,O=carddrift  creates the planners'
#                                     copy of CARD_EVENTS (nats/planners-card-events.json), nothing else
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

# ca NAME SUBJECT: a CA certificate and key
ca() {
  key "$1-key.pem"
  openssl req -x509 -new -key "$1-key.pem" -sha256 -days "$days" -subj "$2" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.pem"
}
ca ca "/O=carddrift/CN=carddrift test CA"
ca route-ca "/O=carddrift/CN=carddrift test route CA"

# sign NAME SUBJECT EXTENSIONS [CA]
sign() {
  local name=$1 subj=$2 ext=$3 ca=${4:-ca}
  key "$name-key.pem"
  openssl req -new -key "$name-key.pem" -subj "$subj" -out "$name.csr"
  printf '%b\n' "$ext" >"$name.ext"
  openssl x509 -req -in "$name.csr" -CA "$ca.pem" -CAkey "$ca-key.pem" -CAcreateserial -sha256 \
    -days "$days" -extfile "$name.ext" -out "$name.pem" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

sign server "/O=carddrift/CN=nats" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=$sans"
# The route identity: the subject is the cluster block's authorization user.
sign route "/O=carddrift/CN=nats-route" \
  "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=$sans" route-ca
client_ext="basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth"
sign carddrift "/O=carddrift/CN=carddrift" "$client_ext"
sign client "/O=carddrift/CN=a2a-client" "$client_ext"
sign planner "/O=carddrift/CN=planner" "$client_ext"
sign admin "/O=carddrift/CN=nats-admin" "$client_ext"
sign planners-admin "/O=carddrift/CN=planners-admin" "$client_ext"
rm -f ca.srl route-ca.srl
# Public parts readable by the containers' non-root users; keys stay 0600 (mount them
# with the right owner, or as Kubernetes secrets).
chmod 644 ./*.pem
chmod "${KEY_MODE:-600}" ./*-key.pem
echo "test certificates in $(pwd): ca.pem, server.pem, carddrift.pem, client.pem, planner.pem, admin.pem, planners-admin.pem, route-ca.pem, route.pem (+ *-key.pem)"
