#!/bin/sh
# make run: the main job, a QEMU boot of a node whose /init is constel-agent. The boot needs
# the initrd, the host tools and the QEMU harness (issues 5 to 8), none of which exists yet.
# Until then this says what it will do and fails, rather than pretend.
cat >&2 <<'MSG'
make run: the QEMU boot is not built yet.
When it is, this command will:
  1. build build/constel-agent (done: see build/constel-agent) and an initrd with it as /init;
  2. start swtpm and the host tools on 127.0.0.1 (metadata server, join service, init client);
  3. boot a Debian kernel under QEMU (TCG) with restrict=on networking, a virtio state disk,
     and watch the agent attest, receive its key, open the LUKS2 state disk and hand over.
What works today: build/constel-agent --help, --version, and `make test`.
MSG
exit 1
