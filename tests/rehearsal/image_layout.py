"""Where the image keeps our binaries, and how the rehearsal plays them with the build's.

docker/Dockerfile's runtime stage installs the ddp-tools package, so ddprun, the trainers and the
data tools are in /usr/bin beside the system's programs. The rehearsal runs the build's binaries
(rehearse.make_bin_dir's folder) in their place: that folder goes first in PATH, and a command or
ENTRYPOINT naming one of our binaries by its /usr/bin path is pointed at the build's copy. Other
/usr/bin programs (sh, env) stay the host's.
"""
import os

IMAGE_BIN = "/usr/bin"


def path_with(bin_dir, path):
    """The image's PATH with the build's binaries found first, as if they were in /usr/bin."""
    return bin_dir + ":" + (path or "/usr/bin:/bin")


def binary_mapping(bin_dir):
    """(image path, local path) of each of our binaries: /usr/bin/train_cifar10 -> bin_dir/train_cifar10."""
    return [(IMAGE_BIN + "/" + name, os.path.join(bin_dir, name)) for name in sorted(os.listdir(bin_dir))]


def local_argv0(arg, bin_dir):
    """An ENTRYPOINT or command word naming one of our binaries by its image path, pointed at the build's."""
    for image_path, local in binary_mapping(bin_dir):
        if arg == image_path:
            return local
    return arg
