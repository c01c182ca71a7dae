# SPDX-License-Identifier: Apache-2.0
"""Where `import tensorplug` looks for device packages: the folders of TP_PLUGIN_PATH, then each
site-packages folder's tensorplug-plugins/ (where a wheel such as tensorplug_apu installs its
plug-in, as TensorFlow's device packages install into tensorflow-plugins/), then the system
folder. The runtime checks every folder alike: one writable by others, or owned by someone
else, is refused with one line."""
import os
import site
import sys

FOLDER = "tensorplug-plugins"


def _site_folders():
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folders = [here]
    try:
        folders.extend(site.getsitepackages())
    except AttributeError:  # some embedded interpreters have no site.getsitepackages
        pass
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    folders.extend(p for p in sys.path if p.endswith("-packages"))
    return folders


def plugin_path():
    """The search path handed to the runtime: folders separated by ':'."""
    entries = [e for e in os.environ.get("TP_PLUGIN_PATH", "").split(":") if e]
    for folder in _site_folders():
        candidate = os.path.join(folder, FOLDER)
        if os.path.isdir(candidate):
            candidate = os.path.realpath(candidate)
            if candidate not in entries:
                entries.append(candidate)
    return ":".join(entries)
