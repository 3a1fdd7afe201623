"""The libvirt/QEMU driver: real guests (seed 001/003's ``libvirt具体创建虚拟机``)."""
