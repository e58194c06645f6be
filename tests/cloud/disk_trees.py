#!/usr/bin/env python3
"""Builds sysfs trees and device pages as each cloud presents its disks, for
`constel-agent state-disk --sys DIR/sys --dev DIR/dev`. Built from the sources that name the
bytes (see docs/platform.md):

- GCP NVMe (guest-configs' 65-gce-disk-naming.rules and google_nvme_id): controller model
  "nvme_card-pd"; the disk's name in packed JSON at byte 384 of Identify Namespace.
- GCP SCSI (the same rules with scsi_id, k8s PD CSI's ^0Google\\s+PersistentDisk\\s+(\\S+)):
  vendor "Google", model "PersistentDisk", the name as the VPD page 0x83 designator of type 0
  (vendor specific), ASCII, associated with the LU (QEMU's scsi-hd device_id makes the same).
- Azure (WALinuxAgent's 66-azure-storage.rules): vendor "Msft", model "Virtual Disk", the
  data disks under the VMBus device f8b3781b-1e82-4818-a1c3-63d806ec15bb, LUN = the last field
  of H:C:T:L.
- AWS (amazon-ec2-utils' ebsnvme-id): Identify Controller VID 0x1D0F, MN "Amazon Elastic Block
  Store", the block device name at bytes 3072..3103, space or NUL padded.

A device node of the tree is a regular file holding its Identify Controller page and then its
Identify Namespace page (what nvme_identify reads in place of the ioctl).
"""
import json
import os
import sys

PAGE = 4096


def put(path, data, mode="w"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, mode) as f:
        f.write(data)


def pad(s, n, c=b" "):
    b = s.encode() if isinstance(s, str) else s
    return b + c * (n - len(b))


def id_ctrl(vid, sn, mn, bdev=b""):
    p = bytearray(PAGE)
    p[0:2] = vid.to_bytes(2, "little")
    p[2:4] = vid.to_bytes(2, "little")  # SSVID
    p[4:24] = pad(sn, 20)
    p[24:64] = pad(mn, 40)
    p[64:72] = pad("1.0", 8)
    if bdev:
        p[3072:3104] = bdev[:32] + b"\0" * (32 - len(bdev[:32]))
    return bytes(p)


def id_ns(vs_json=None, nsze=1 << 21):
    p = bytearray(PAGE)
    p[0:8] = nsze.to_bytes(8, "little")
    p[8:16] = nsze.to_bytes(8, "little")
    if vs_json is not None:
        b = vs_json.encode()
        p[384:384 + len(b)] = b
    return bytes(p)


def nvme(root, ctrl, ns, model, ctrl_page, ns_page):
    name = "%sn%d" % (ctrl, ns)
    put("%s/sys/devices/pci0000:00/0000:00:04.0/nvme/%s/model" % (root, ctrl), model + "\n")
    put("%s/sys/devices/pci0000:00/0000:00:04.0/nvme/%s/%s/nsid" % (root, ctrl, name), "%d\n" % ns)
    os.makedirs("%s/sys/block/%s" % (root, name), exist_ok=True)
    link = "%s/sys/block/%s/device" % (root, name)
    if not os.path.islink(link):
        os.symlink("../../devices/pci0000:00/0000:00:04.0/nvme/%s" % ctrl, link)
    put("%s/dev/%s" % (root, name), ctrl_page + ns_page, "wb")
    put("%s/dev/%s" % (root, ctrl), ctrl_page, "wb")


def vpd83(*descs):
    body = b"".join(bytes([cs, (assoc << 4) | typ, 0, len(d)]) + d for cs, assoc, typ, d in descs)
    return bytes([0, 0x83]) + len(body).to_bytes(2, "big") + body


def scsi(root, name, parent, hctl, vendor, model, vpd=None):
    dev = "%s/sys/devices/%s/%s" % (root, parent, hctl)
    put(dev + "/vendor", pad(vendor, 8).decode() + "\n")
    put(dev + "/model", pad(model, 16).decode() + "\n")
    if vpd is not None:
        put(dev + "/vpd_pg83", vpd, "wb")
    os.makedirs("%s/sys/block/%s" % (root, name), exist_ok=True)
    os.symlink(os.path.relpath(dev, "%s/sys/block/%s" % (root, name)), "%s/sys/block/%s/device" % (root, name))
    put("%s/dev/%s" % (root, name), b"", "wb")


def gcp_nvme(root, with_state=True):
    c = id_ctrl(0x1AE0, "nvme_card-pd", "nvme_card-pd")
    nvme(root, "nvme0", 1, "nvme_card-pd", c,
         id_ns(json.dumps({"device_name": "persistent-disk-0", "disk_type": "PERSISTENT"}, separators=(",", ":"))))
    if with_state:
        nvme(root, "nvme0", 2, "nvme_card-pd", c,
             id_ns(json.dumps({"device_name": "state-disk", "disk_type": "PERSISTENT"}, separators=(",", ":"))))
    # a local SSD: another model, never asked
    nvme(root, "nvme1", 1, "nvme_card", id_ctrl(0x1AE0, "local", "nvme_card"), id_ns())


def gcp_scsi(root):
    host = "pci0000:00/0000:00:03.0/virtio0/host0"
    naa = (1, 0, 3, bytes.fromhex("6000c29f1ad3e8b7a1b2c3d4e5f60718"))
    scsi(root, "sda", host + "/target0:0:1", "0:0:1:0", "Google", "PersistentDisk",
         vpd83(naa, (2, 0, 0, b"persistent-disk-0")))
    scsi(root, "sdb", host + "/target0:0:2", "0:0:2:0", "Google", "PersistentDisk",
         vpd83(naa, (2, 0, 0, b"state-disk")))


def azure(root, lun=0):
    vmbus = "LNXSYSTM:00/LNXSYBUS:00/ACPI0004:00/VMBUS:00"
    scsi(root, "sda", vmbus + "/f8b3781a-1e82-4818-a1c3-63d806ec15bb/host0/target0:0:0", "0:0:0:0",
         "Msft", "Virtual Disk")  # the OS disk, LUN 0 of scsi0
    scsi(root, "sdb", vmbus + "/f8b3781a-1e82-4818-a1c3-63d806ec15bb/host0/target0:0:0", "0:0:0:1",
         "Msft", "Virtual Disk")  # the resource disk
    scsi(root, "sdc", vmbus + "/f8b3781b-1e82-4818-a1c3-63d806ec15bb/host1/target1:0:0", "1:0:0:%d" % lun,
         "Msft", "Virtual Disk")  # the data disk


def aws(root, bdev=b"sdb" + b" " * 29):
    mn = "Amazon Elastic Block Store"
    nvme(root, "nvme0", 1, mn, id_ctrl(0x1D0F, "vol0123456789abcdef0", mn, b"/dev/xvda"), id_ns())
    nvme(root, "nvme1", 1, mn, id_ctrl(0x1D0F, "vol0fedcba9876543210", mn, bdev), id_ns())
    nvme(root, "nvme2", 1, "Amazon EC2 NVMe Instance Storage",
         id_ctrl(0x1D0F, "AWS1234", "Amazon EC2 NVMe Instance Storage", b"ephemeral0"), id_ns())


SHAPES = {
    "gcp-nvme": gcp_nvme,
    "gcp-nvme-none": lambda r: gcp_nvme(r, False),
    "gcp-scsi": gcp_scsi,
    "azure": azure,
    "azure-lun1": lambda r: azure(r, 1),
    "aws": aws,
    "aws-devpath-nul": lambda r: aws(r, b"/dev/sdb\0\0 "),
}

if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in SHAPES:
        sys.exit("usage: disk_trees.py {%s} DIR" % ",".join(SHAPES))
    SHAPES[sys.argv[1]](sys.argv[2])
