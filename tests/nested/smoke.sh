# A job for the nested host (tests/nested/test_nested_host.py): KVM is there, its halt-polling
# parameters are writable, and idlelab boots under it on the local KVM path.
set -e
echo "smoke kvm=$([ -c /dev/kvm ] && echo 1 || echo 0) host=$IDLELAB_HOST attempt=$IDLELAB_NESTED_ATTEMPT"
# the VM /init holds for the host's life (tools/nested/hold-kvm-keys): still there
held=$(cat /dev/shm/kvm-keys-held)
echo "smoke keys-held=$([ -d "/proc/$held" ] && echo 1 || echo 0)"
p=/sys/module/kvm/parameters/halt_poll_ns
old=$(cat $p)
echo 123000 > $p
echo "smoke halt_poll_ns old=$old set=$(cat $p)"
echo "$old" > $p
tools/qemu-run --accel kvm --smp 2 --timeout 120 --cmdline "workload=pingpong duration=200ms"
