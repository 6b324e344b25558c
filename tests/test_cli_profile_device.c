/*
 * test_cli_profile_device.c — `tessera profile-device` through the command itself (cli_util.h):
 * --list shows the built-in profiles (ipu-mk2, ipu-bow, h200) with where each was found and the
 * CPU as not measured yet; --show prints a profile's figures and sources, by name or file;
 * measuring the CPU for a second writes a profile that --show reads back; an unknown profile, a
 * bad profile file, an unknown device and bad flags exit 2 with a message; `tessera --help` lists
 * the subcommand. The cache is a temporary folder ($XDG_CACHE_HOME).
 *
 * The command's path comes from TS_CLI (set by CMake to the built `tessera`); without it, the
 * test looks for ./tessera (ctest runs tests in the build directory) and skips when it is absent.
 */
#include "test_util.h"
#include "cli_util.h"

static void test_list_show(void) {
    int rc = tessera(NULL, "profile-device --list");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "ipu-mk2") && strstr(out_text, "ipu-bow") && strstr(out_text, "h200") &&
              strstr(out_text, "profiles/ipu-mk2.json"),
          "list:\n%s", out_text);
    CHECK(strstr(out_text, "cpu ") && strstr(out_text, "not measured yet"), "the cpu, not measured:\n%s", out_text);

    rc = tessera(NULL, "profile-device --show ipu-bow");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "profile ipu-bow") && strstr(out_text, "350 TFLOP/s") && strstr(out_text, "65 TB/s") &&
              strstr(out_text, "900 MB"),
          "show:\n%s", out_text);
    CHECK(strstr(out_text, "sources:") && strstr(out_text, "mem_bw: Bow IPU datasheet"), "show:\n%s", out_text);

    rc = tessera(NULL, "profile-device --show '%s/profiles/h200.json'", TS_SOURCE_DIR);
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "profile h200") && strstr(out_text, "989 TFLOP/s") && strstr(out_text, "141 GB"),
          "show by file:\n%s", out_text);

    write_str("show.json", "{\"show\": \"ipu-bow\"}"); /* the options from --config */
    rc = tessera(NULL, "profile-device --config show.json");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "profile ipu-bow") != NULL, "--config show.json:\n%s", out_text);

    rc = tessera(NULL, "--help");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "profile-device") != NULL, "tessera --help:\n%s", out_text);
    rc = tessera(NULL, "profile-device --help");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "--list") && strstr(out_text, "--show") && strstr(out_text, "--seconds"), "help:\n%s", out_text);
}

static void test_measure(void) {
    int rc = tessera(NULL, "profile-device --device cpu --seconds 1 --out measured/cpu.json");
    CHECK_RAN(rc, 0);
    CHECK(exists("measured/cpu.json"), "no profile written");
    CHECK(strstr(out_text, "profile cpu") && strstr(out_text, "(measured)") && strstr(out_text, "measured GEMMs") &&
              strstr(out_text, "written to measured/cpu.json"),
          "measure:\n%s", out_text);
    rc = tessera(NULL, "profile-device --show measured/cpu.json");
    CHECK_RAN(rc, 0);
    CHECK(strstr(out_text, "measured by tessera profile-device on") != NULL, "show measured:\n%s", out_text);
}

static void test_errors(void) {
    int rc = tessera(NULL, "profile-device --show no-such-profile");
    CHECK_RAN(rc, 2);
    CHECK(strstr(err_text, "no device profile named \"no-such-profile\"") && strstr(err_text, "ipu-mk2"), "stderr: %s", err_text);
    write_str("bad.json", "{\"name\": \"bad\", \"memory_bytes\": -5}");
    rc = tessera(NULL, "profile-device --show bad.json");
    CHECK_RAN(rc, 2);
    CHECK(strstr(err_text, "bad.json") && strstr(err_text, "\"memory_bytes\""), "stderr: %s", err_text);
    rc = tessera(NULL, "profile-device --device nodevice:0 --seconds 1");
    CHECK_FAILS(rc, "nodevice");
    CHECK(rc == 2, "an unknown device: exit %d", rc);
    rc = tessera(NULL, "profile-device --seconds -1");
    CHECK_FAILS(rc, "--seconds");
    CHECK(rc == 2, "exit %d", rc);
    rc = tessera(NULL, "profile-device --seconds 0");
    CHECK_FAILS(rc, "(0, 3600]");
    CHECK(rc == 2, "exit %d", rc);
    rc = tessera(NULL, "profile-device --bogus");
    CHECK_FAILS(rc, "unknown flag '--bogus'");
    CHECK(rc == 2, "exit %d", rc);
    rc = tessera(NULL, "profile-device --list --show h200");
    CHECK_FAILS(rc, "one at a time");
    CHECK(rc == 2, "exit %d", rc);
    rc = tessera(NULL, "profile-device --show");
    CHECK_FAILS(rc, "--show needs a value");
    CHECK(rc == 2, "exit %d", rc);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    int rc = cli_setup("ts_cli_profile_device");
    if (rc) return rc;
    setenv("XDG_CACHE_HOME", dir, 1); /* the commands' cache: nothing of the user's */
    unsetenv("TESSERA_PROFILE_PATH");
    RUN(test_list_show);
    RUN(test_measure);
    RUN(test_errors);
    cli_cleanup("test_cli_profile_device");
    return tu_finish("test_cli_profile_device");
}
