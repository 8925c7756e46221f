# A carbon-cache (carbon 1.1.10) that counts the points it writes.
#
# benchq starts each carbon-cache through this script (internal/localdb
# writes it into the daemon's directory as carbon-cache.py, so that the
# process' comm is carbon's own, behind the venv's python). It wraps
# carbon's whisper writer: every point written to a series file is counted,
# carbon's own series (CARBON_METRIC_PREFIX, "carbon.") apart from the
# others, and the two totals are kept in a small JSON file that benchq
# reads (internal/whisper.ReadWritten). Carbon's own counters cannot give
# that count exactly: it records them once a second, stamped to the second,
# and two records in one second share one whisper slot (docs/tsdb.md).
#
# usage: carbon-cache.py WRITTEN-FILE CARBON-CACHE-SCRIPT [carbon's arguments]
#
# WRITTEN-FILE holds {"points": N, "own": M}: the points written to series
# that are not carbon's own, and those written to carbon's own. It exists
# before carbon starts, and is replaced (never rewritten in place) within a
# tenth of a second of each change, and once more as carbon stops. It lives
# beside the whisper files and counts what they were given: a cache started
# again on the same files goes on from the totals it finds.

import json
import os
import sys
import threading
import time

EVERY_S = 0.1
SAVING = threading.Lock()  # the keeper thread, and the reactor at its end


class Totals:
    """The points written; carbon's writer thread alone adds to them."""

    def __init__(self, points=0, own=0):
        self.points = points
        self.own = own

    @classmethod
    def load(cls, path):
        """The totals kept in path, or zeros when there is none yet."""
        try:
            with open(path) as f:
                kept = json.load(f)
        except FileNotFoundError:
            return cls()
        return cls(int(kept["points"]), int(kept["own"]))

    def snapshot(self):
        return {"points": self.points, "own": self.own}


def keep(path, totals):
    """Writes the totals to path whenever they change, forever. A count that
    cannot be kept ends the cache (its deployer sees it die) rather than
    leave a stale total behind."""
    last = None
    try:
        while True:
            last = save(path, totals, last)
            time.sleep(EVERY_S)
    except Exception as exc:  # noqa: BLE001 - any failure to keep the count
        print(
            f"benchq: the count of written points cannot be kept in {path}: {exc}",
            flush=True,
        )
        os._exit(1)


def save(path, totals, last=None):
    """Writes totals' snapshot, taken under the lock, unless it is last."""
    with SAVING:
        now = totals.snapshot()
        if now != last:
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump(now, f)
            os.replace(tmp, path)
        return now


def count_writes(path, totals):
    """Wraps carbon's whisper writer so that each point it writes counts.

    And saves the totals once more when the reactor has shut down, after
    carbon's writer thread has ended: twistd then ends the process by its
    signal, and no code after it runs. The trigger is added when carbon
    makes its database, on start (twistd has installed its reactor then;
    carbon's other modules cannot be imported before it reads its
    configuration).
    """
    from carbon import database
    from carbon.conf import settings

    db = database.WhisperDatabase
    init, write = db.__init__, db.write

    def made(self, *args, **kwargs):
        init(self, *args, **kwargs)
        from twisted.internet import reactor

        reactor.addSystemEventTrigger("after", "shutdown", lambda: save(path, totals))

    def counted(self, metric, datapoints):
        write(self, metric, datapoints)  # a failed write raises: not counted
        if metric.startswith(settings.CARBON_METRIC_PREFIX + "."):
            totals.own += len(datapoints)
        else:
            totals.points += len(datapoints)

    db.__init__, db.write = made, counted


def main():
    if len(sys.argv) < 3:
        raise SystemExit(
            "usage: carbon-cache.py WRITTEN-FILE CARBON-CACHE-SCRIPT [carbon's arguments]"
        )
    path, script = sys.argv[1], sys.argv[2]
    sys.argv = [script] + sys.argv[3:]
    totals = Totals.load(path)
    save(path, totals)
    count_writes(path, totals)
    threading.Thread(
        target=keep, args=(path, totals), name="benchq-written", daemon=True
    ).start()

    from carbon.exceptions import CarbonConfigException
    from carbon.util import run_twistd_plugin

    try:
        run_twistd_plugin(script)  # carbon's own script does just this
    except CarbonConfigException as exc:
        raise SystemExit(str(exc))


if __name__ == "__main__":
    main()
