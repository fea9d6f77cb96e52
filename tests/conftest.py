import os

import pytest

from ffncalc.cli import main


@pytest.fixture
def cli(capsys):
    """Run the command line in-process: (exit status, stdout, stderr), tables 200 columns wide."""
    def run(*args):
        os.environ["COLUMNS"] = "200"
        with pytest.raises(SystemExit) as exc:
            main(list(args))
        out, err = capsys.readouterr()
        return exc.value.code, out, err
    return run
