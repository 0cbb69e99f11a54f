#!/usr/bin/env bash
# A real SLURM cluster on this one machine, from Debian's packages, for the `slurm` tests
# (tests/test_slurm.py): munged, MariaDB and slurmdbd (so sacct reads real accounting), slurmctld, and
# three slurmd, node1 with two stand-in GPUs declared as GRES (gpu:h100:2), node2 and node3 without. A
# campaign on the cpu profile measures stand-in "GPUs" (processes) on each node at once. Every file
# it makes, configuration and state, lies under DIR. The daemons listen on the loopback address, but for
# slurmdbd, which has no setting for it.
#
#   .ci/slurm.sh start DIR   install the packages if missing (root), start the daemons, wait for idle nodes
#   .ci/slurm.sh stop DIR    stop whatever of them runs; safe to call twice, or after a failed start
#
# After start, `export SLURM_CONF=DIR/etc/slurm.conf` makes sbatch, sacct and the tests use it.
set -euo pipefail

usage() {
  echo "usage: $0 start|stop DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
action=$1
dir=$2

# The cluster's name; the tests submit only to a cluster of this name, never to a site's real one.
CLUSTER=gpurepro-ci
# Ports of slurmctld, slurmdbd, MariaDB and the three slurmd, away from SLURM's defaults (6817-6819) so a
# site's daemons on the same machine are left alone.
CTLD_PORT=16817
DBD_PORT=16819
DB_PORT=16820
NODE_PORTS=(16821 16822 16823)
NODES=(node1 node2 node3)
# Inside a job, snakemake-executor-plugin-slurm-jobstep starts the rule through srun with every SLURM_*
# variable removed, SLURM_CONF too, so that srun reads SLURM's default path: it links to this cluster's
# slurm.conf while the cluster runs, as it would be on a site's nodes, unless another file is there.
DEFAULT_CONF=/etc/slurm/slurm.conf
# Seconds between a cancelled job's SIGTERM and SIGKILL.
KILL_WAIT=5
DAEMONS=(slurmd-node3 slurmd-node2 slurmd-node1 slurmctld slurmdbd mysqld munged)

log_tail() {
  local file
  for file in "$dir"/log/*.log; do
    [ -f "$file" ] && { echo "--- $file"; tail -n 15 "$file"; }
  done
}

stop() {
  local name pid
  # Jobs outlive slurmd (their slurmstepd runs on): cancel them first, while slurmctld still answers.
  if [ -f "$dir/etc/slurm.conf" ] && SLURM_CONF=$dir/etc/slurm.conf timeout 10 scontrol ping > /dev/null 2>&1; then
    if [ -n "$(SLURM_CONF=$dir/etc/slurm.conf squeue --noheader --user "$(id -un)")" ]; then
      SLURM_CONF=$dir/etc/slurm.conf timeout 10 scancel --full --user "$(id -un)" || true
      sleep "$KILL_WAIT"
    fi
  fi
  for name in "${DAEMONS[@]}"; do
    pid=$(cat "$dir/run/$name.pid" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill "$pid"
      timeout 30 tail --sleep-interval=0.2 --pid="$pid" -f /dev/null || kill -9 "$pid"
    fi
    rm -f "$dir/run/$name.pid"
  done
  [ "$(readlink "$DEFAULT_CONF" 2>/dev/null)" = "$dir/etc/slurm.conf" ] && rm -f "$DEFAULT_CONF"
  return 0
}

install_packages() {
  local missing=()
  command -v slurmctld > /dev/null && command -v slurmd > /dev/null || missing+=(slurm-wlm)
  command -v slurmdbd > /dev/null || missing+=(slurmdbd)
  command -v munged > /dev/null || missing+=(munge)
  command -v mariadbd > /dev/null || missing+=(mariadb-server)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing ${missing[*]}, and only root can install them (apt-get)" >&2
    return 1
  fi
  timeout 300 apt-get update -q > /dev/null
  DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -q --no-install-recommends \
    "${missing[@]}" > "$dir/log/apt.log" 2>&1 || { tail -n 20 "$dir/log/apt.log" >&2; return 1; }
}

# Wait until a command succeeds, at most $1 seconds.
wait_for() {
  local seconds=$1
  shift
  for _ in $(seq "$((seconds * 2))"); do
    "$@" > /dev/null 2>&1 && return 0
    sleep 0.5
  done
  "$@"
}

# Whether sinfo, with these options, lists every node.
all_nodes() {
  [ "$(sinfo --noheader --Node "$@" | wc -l)" -eq "${#NODES[@]}" ]
}

write_config() {
  local etc=$dir/etc
  # slurm.conf: one partition "gpu" (the name profiles/slurm asks for) over the three nodes. Each node is
  # given one of this machine's cores and 8 GB (three jobs at once share a 2-core machine's cores). Processes are
  # tracked without cgroups, which a CI machine may not delegate; the tests need no device isolation.
  cat > "$etc/slurm.conf" << EOF
ClusterName=$CLUSTER
SlurmctldHost=localhost
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.socket
CredType=cred/munge
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
AccountingStoragePass=$dir/run/munge.socket
AccountingStorageTRES=gres/gpu,gres/gpu:h100
AccountingStoreFlags=job_comment
AccountingStorageEnforce=associations
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=5
ReturnToService=2
KillWait=$KILL_WAIT
NodeName=node1 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=${NODE_PORTS[0]} CPUs=1 RealMemory=8000 Gres=gpu:h100:2
NodeName=node2 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=${NODE_PORTS[1]} CPUs=1 RealMemory=8000
NodeName=node3 NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=${NODE_PORTS[2]} CPUs=1 RealMemory=8000
PartitionName=gpu Nodes=node1,node2,node3 Default=YES MaxTime=INFINITE State=UP
EOF
  # A GPU GRES needs device files: with a count alone slurmd reports none and the node turns INVAL.
  # Two terminals stand in for /dev/nvidia0 and /dev/nvidia1; SLURM only hands out their indices.
  echo "NodeName=node1 Name=gpu Type=h100 File=/dev/tty[0-1]" > "$etc/gres.conf"
  # slurmdbd reads slurmdbd.conf beside slurm.conf, and only if its owner alone can read it.
  cat > "$etc/slurmdbd.conf" << EOF
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.socket
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$dir/run/slurmdbd.pid
LogFile=$dir/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
  chmod 600 "$etc/slurmdbd.conf"
}

start() {
  if [ -n "$(ls -A "$dir" 2>/dev/null)" ] && [ ! -f "$dir/etc/slurm.conf" ]; then
    echo "$dir holds other files: give a new or empty folder, which start fills and empties" >&2
    return 1
  fi
  stop
  rm -rf "$dir"
  mkdir -p "$dir"/{etc,log,run,state,spool/node1,spool/node2,spool/node3,munge,mysql}
  # munged wants its socket's folders open to all and its key's folder closed to others.
  chmod 755 "$dir" "$dir/run"
  chmod 700 "$dir/munge"
  install_packages
  export SLURM_CONF=$dir/etc/slurm.conf
  write_config
  if [ -e "$DEFAULT_CONF" ] || [ -L "$DEFAULT_CONF" ]; then
    echo "$DEFAULT_CONF exists: jobs would use that cluster's configuration, not this one's" >&2
    return 1
  fi
  mkdir -p "$(dirname "$DEFAULT_CONF")"
  ln -s "$SLURM_CONF" "$DEFAULT_CONF"

  mungekey --create --keyfile="$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$dir/run/munge.socket" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"

  mariadb-install-db --no-defaults --datadir="$dir/mysql" --user=root --skip-test-db \
    > "$dir/log/mysql-install.log" 2>&1
  mariadbd --no-defaults --datadir="$dir/mysql" --socket="$dir/run/mysqld.sock" \
    --pid-file="$dir/run/mysqld.pid" --port=$DB_PORT --bind-address=127.0.0.1 --user=root \
    --innodb-buffer-pool-size=64M --log-error="$dir/log/mysqld.log" > /dev/null 2>&1 &
  wait_for 60 mariadb-admin --no-defaults --socket="$dir/run/mysqld.sock" ping
  mariadb --no-defaults --socket="$dir/run/mysqld.sock" << EOF
CREATE USER 'slurm'@'localhost' IDENTIFIED BY 'slurm';
CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF

  slurmdbd
  wait_for 60 sacctmgr --noheader list cluster
  # Associations are enforced, as on most sites: a job runs only under an account of its user. The tests
  # name gpurepro-ci (slurm_account), which this user gets besides its default one.
  sacctmgr --immediate add cluster "$CLUSTER" > /dev/null
  sacctmgr --immediate add account "$CLUSTER" cluster="$CLUSTER" description=tests organization=tests > /dev/null
  sacctmgr --immediate add user "$(id -un)" account="$CLUSTER" cluster="$CLUSTER" > /dev/null
  slurmctld
  wait_for 60 scontrol ping
  for node in "${NODES[@]}"; do
    slurmd -N "$node"
  done
  # A node's first registration may leave it drained (or INVAL while slurmd starts): resume it once.
  wait_for 60 all_nodes --responding
  if sinfo --noheader --Node --format=%T | grep -qiE 'drain|inval'; then
    scontrol update nodename="$(IFS=,; echo "${NODES[*]}")" state=resume || true
  fi
  wait_for 60 all_nodes --states=idle
  sinfo --Node --long
}

failed_start() {
  local status=$?
  if [ "$status" -ne 0 ]; then
    echo "the SLURM cluster did not start (exit $status); its logs:" >&2
    log_tail >&2
    stop
  fi
}

case $action in
  start)
    trap failed_start EXIT
    start
    ;;
  stop) stop ;;
  *) usage ;;
esac
