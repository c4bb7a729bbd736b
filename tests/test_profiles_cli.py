"""`hil profiles list / show / plot` end to end through the command line."""

from hil.cli import main as hil_main


def test_list_is_a_table_of_every_profile_with_means(capsys):
    assert hil_main(["profiles", "list"]) == 0
    out = capsys.readouterr().out
    assert "0.55kg-Quadrotor-1" in out and "5.45kg-JFRC" in out and "default" in out
    assert "mean of 18 real" in out and "mean of 18 virtual" in out
    assert hil_main(["profiles", "list", "--category", "virtual"]) == 0
    out = capsys.readouterr().out
    assert "0.60kg-EMAX" not in out and "mean of 18 virtual" in out


def test_show_gives_numbers_rigid_body_and_px4_parameters(capsys):
    assert hil_main(["profiles", "show", "2.00kg-T-MOTOR"]) == 0
    out = capsys.readouterr().out
    for fragment in ("TWR_max           1.4", "alpha_xy_max      55.6 rad/s^2", "rotor thrust max", "SIH_T_MAX",
                     "MC_ROLLRATE_K"):
        assert fragment in out


def test_unknown_profile_is_one_clear_error(capsys):
    assert hil_main(["profiles", "show", "no-such-quad"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown vehicle profile 'no-such-quad'" in err


def test_plot_writes_a_png_of_the_library(tmp_path, capsys):
    out = tmp_path / "fig" / "library.png"
    assert hil_main(["profiles", "plot", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 20_000
    assert str(out) in capsys.readouterr().out


def test_category_with_no_profiles_is_refused(capsys):
    assert hil_main(["profiles", "list", "--category", "imaginary"]) == 2
    assert "no profiles in category 'imaginary'" in capsys.readouterr().err
