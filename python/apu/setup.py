# SPDX-License-Identifier: Apache-2.0
"""The APU device package: libtensorplug_apu.so in site-packages/tensorplug-plugins/, the folder
`import tensorplug` searches, as TensorFlow searches tensorflow-plugins/. The plug-in links no
Python and no libtensorplug, but it is machine code: the wheel is tagged for this platform."""
from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(
    packages=["tensorplug-plugins"],
    package_data={"tensorplug-plugins": ["libtensorplug_apu.so"]},
    distclass=BinaryDistribution,
)
