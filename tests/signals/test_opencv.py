"""OpenCV's thread limit is never first set in a forked worker (signals/opencv.py).

Once OpenCV's thread pool has run in a process, ``cv2.setNumThreads`` hangs in a child forked
from it.  The suite stalled so: a check in the pytest process ran the template hold (threaded
OpenCV), and the next check's forked workers set the limit before extracting keypoints.  The
driver here is a child process with a deadline, so that a regression fails instead of hanging.
"""

import subprocess
import sys
import textwrap

DRIVER = textwrap.dedent("""
    import numpy as np, cv2
    from pytest_leakcheck.detectors.same_scene import features
    from pytest_leakcheck.signals.pool import map_all

    cv2.setNumThreads(2)  # a user's own threaded OpenCV before the check: the pool starts
    big = np.random.default_rng(0).integers(0, 255, (1500, 1500), dtype=np.uint8)
    cv2.GaussianBlur(cv2.resize(big, (900, 900)), (5, 5), 1.0)
    greys = [np.ascontiguousarray(big[k * 40:k * 40 + 320, k * 40:k * 40 + 320]) for k in range(8)]
    rows = list(map_all(features.extract, greys, 1, 2))  # forked workers extract keypoints
    print(len(rows), min(len(r) for r in rows), cv2.getNumThreads())
""")


def test_workers_forked_after_threaded_opencv_extract_keypoints():
    done = subprocess.run([sys.executable, "-c", DRIVER], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    count, shortest, threads = done.stdout.split()
    assert int(count) == 8 and int(shortest) > 6  # each row holds keypoints, not an empty head
    assert threads == "1"  # the driver set the limit before it forked
