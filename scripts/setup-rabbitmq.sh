#!/usr/bin/env bash
# Install RabbitMQ from Debian and run it on loopback without systemd, with a
# `cirrus` user and vhost for tests. Idempotent. Prints the transport URL.
# A failure here is reported and tolerated: the AMQP tests then skip, saying why.
set -uo pipefail
export DEBIAN_FRONTEND=noninteractive
URL="amqp://cirrus:cirrus@127.0.0.1:5672/cirrus"
ctl() { timeout 60 rabbitmqctl "$@"; }

if ! command -v rabbitmq-server >/dev/null; then
    (apt-get update -qq && apt-get install -y -qq --no-install-recommends rabbitmq-server) \
        >/tmp/cirrus-rabbitmq-install.log 2>&1 || {
        echo "setup-rabbitmq: install failed (see /tmp/cirrus-rabbitmq-install.log)" >&2; exit 0; }
    # The package may have started a broker bound to all interfaces; restart ours below.
    ctl stop >/dev/null 2>&1 || true
fi
start_broker() {
    export RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 RABBITMQ_DIST_PORT=25672
    export RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS="-kernel inet_dist_use_interface {127,0,0,1}"
    rabbitmq-server -detached >/tmp/cirrus-rabbitmq.log 2>&1
    for _ in $(seq 1 60); do ctl status >/dev/null 2>&1 && break; sleep 1; done
}
if ! ctl status >/dev/null 2>&1; then
    start_broker
fi
if ! ctl await_startup >/dev/null 2>&1; then
    # A broker killed mid-write can hang recovering its message store for good
    # (seen here: "Mnesia is overloaded", then nothing). This broker only ever
    # holds test and benchmark queues: start it once more from empty state.
    echo "setup-rabbitmq: broker stuck starting; resetting its state and starting again" >&2
    pkill -u rabbitmq beam.smp; sleep 3; pkill -9 -u rabbitmq beam.smp; pkill -u rabbitmq epmd
    rm -rf /var/lib/rabbitmq/mnesia
    start_broker
    if ! ctl await_startup >/dev/null 2>&1; then
        echo "setup-rabbitmq: broker did not start (see /tmp/cirrus-rabbitmq.log)" >&2; exit 0
    fi
fi
# Vhosts that tests and benchmarks make for themselves (cirrus_mh_*, cirrus_bench_*)
# and a killed run left behind: their durable queues and messages are recovered
# at every broker start (a test restarts the broker), however old.
for vhost in $(ctl -q list_vhosts name 2>/dev/null | grep -E '^cirrus_(mh|bench)_[0-9a-f]+$'); do
    ctl delete_vhost "$vhost" >/dev/null 2>&1 || true
done
ctl add_vhost cirrus >/dev/null 2>&1 || true
ctl add_user cirrus cirrus >/dev/null 2>&1 || true
ctl set_permissions -p cirrus cirrus ".*" ".*" ".*" >/dev/null 2>&1 || true
echo "RabbitMQ ready: $URL"
