/*
 * test_spoken_digits.c — tools/make_spoken_digits.sh, run into data/speech/spoken_digits, where
 * scripts/install-deps.sh made it (the script skips an OUTDIR it completed and whose script has not
 * changed, so a run only reads; one copy for the release and sanitizer builds): the number of clips of each
 * kind, every clip read through ts_audio_read as 16 kHz audio of a plausible length, the TSVs
 * naming existing files with the label of their folder, and the VAD clips' segments.tsv true:
 * silence before the start it gives, speech right after it and right before its end, silence
 * after. Skipped (exit 77) without espeak-ng, flite or sox (scripts/install-deps.sh installs them).
 */
#define _GNU_SOURCE
#include "tessera_apps.h"
#include "test_util.h"

#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#define OUT TS_SOURCE_DIR "/data/speech/spoken_digits"

/* Read every .wav of dir at 16 kHz, each between min_s and max_s long; the count of them. */
static int read_all(const char *dir, double min_s, double max_s) {
    DIR *d = opendir(dir);
    CHECK(d, "cannot open %s", dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".wav")) continue;
        char path[1400];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        ts_audio *a = ts_audio_read(path, 16000);
        CHECK(a, "%s", ts_last_error());
        if (a) {
            double s = (double)a->n / a->rate;
            CHECK(s >= min_s && s <= max_s, "%s: %.2f s long, not within %.1f .. %.1f s", path, s, min_s, max_s);
        }
        ts_audio_free(a);
        n++;
    }
    closedir(d);
    return n;
}

/* A split's TSV: "path<TAB>label" after a header, each path under OUT/digits and in its label's
 * folder; the number of rows. */
static int tsv_rows(const char *split) {
    char path[256], line[1024];
    snprintf(path, sizeof path, OUT "/digits/%s.tsv", split);
    FILE *f = fopen(path, "r");
    CHECK(f, "cannot open %s", path);
    if (!f) return 0;
    int rows = 0;
    CHECK(fgets(line, sizeof line, f) && !strcmp(line, "path\tlabel\n"), "%s: no header line", path);
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        CHECK(tab, "%s: a row without a tab: %s", path, line);
        if (!tab) break;
        *tab = 0;
        tab[1 + strcspn(tab + 1, "\n")] = 0;
        char folder[128], file[1100];
        snprintf(folder, sizeof folder, "%s/%s/", split, tab + 1);
        CHECK(!strncmp(line, folder, strlen(folder)), "%s: %s is not in the folder of label %s", path, line, tab + 1);
        snprintf(file, sizeof file, OUT "/digits/%s", line);
        struct stat st;
        CHECK(stat(file, &st) == 0, "%s: %s does not exist", path, file);
        rows++;
    }
    fclose(f);
    return rows;
}

static void test_digits(void) {
    static const char *digits[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
    static const struct {
        const char *split;
        int per_label;
    } splits[] = {{"train", 120}, {"heldout", 30}, {"flite", 10}};
    for (int s = 0; s < 3; s++) {
        for (int k = 0; k < 10; k++) {
            char dir[256];
            snprintf(dir, sizeof dir, OUT "/digits/%s/%s", splits[s].split, digits[k]);
            int n = read_all(dir, 0.35, 2.5);
            CHECK(n == splits[s].per_label, "%s: %d clips, not %d", dir, n, splits[s].per_label);
        }
        int rows = tsv_rows(splits[s].split);
        CHECK(rows == 10 * splits[s].per_label, "%s.tsv: %d rows, not %d", splits[s].split, rows,
              10 * splits[s].per_label);
    }
}

static void test_keywords_and_phrases(void) {
    int n = read_all(OUT "/keywords/hey_jarvis", 0.5, 3);
    CHECK(n == 29, "hey_jarvis: %d clips, not 29 (24 espeak-ng, 5 flite)", n);
    n = read_all(OUT "/keywords/alexa", 0.4, 3);
    CHECK(n == 6, "alexa: %d clips, not 6", n);
    n = read_all(OUT "/phrases", 2, 12);
    CHECK(n == 4, "phrases: %d clips, not 4", n);
}

/* The largest |sample| of a between seconds t0 and t1. */
static double peak(const ts_audio *a, double t0, double t1) {
    int64_t i0 = (int64_t)fmax(0, t0 * a->rate), i1 = (int64_t)fmin((double)a->n, t1 * a->rate);
    double m = 0;
    for (int64_t i = i0; i < i1; i++) m = fmax(m, fabs(a->samples[i]));
    return m;
}

static void test_vad_segments(void) {
    int n = read_all(OUT "/vad", 2, 10);
    CHECK(n == 6, "vad: %d clips, not 6", n);
    FILE *f = fopen(OUT "/vad/segments.tsv", "r");
    CHECK(f, "cannot open " OUT "/vad/segments.tsv");
    if (!f) return;
    char line[512], name[256];
    double start, end;
    int rows = 0;
    CHECK(fgets(line, sizeof line, f) && !strcmp(line, "file\tstart_s\tend_s\n"), "segments.tsv: no header");
    while (fgets(line, sizeof line, f)) {
        CHECK(sscanf(line, "%255s %lf %lf", name, &start, &end) == 3, "segments.tsv: bad row %s", line);
        char path[512];
        snprintf(path, sizeof path, OUT "/vad/%s", name);
        ts_audio *a = ts_audio_read(path, 16000);
        CHECK(a, "%s", ts_last_error());
        if (!a) continue;
        double len = (double)a->n / a->rate;
        CHECK(start >= 0.5 && start <= 2 && len - end >= 0.499 && len - end <= 2.001 && end - start > 1,
              "%s: speech from %.3f to %.3f s of %.3f s: not 0.5-2 s of silence around it", name, start, end, len);
        /* silence outside [start, end], speech within 20 ms inside each end */
        CHECK(peak(a, 0, start - 0.001) < 1e-3 && peak(a, end + 0.001, len) < 1e-3, "%s: sound outside the segment",
              name);
        CHECK(peak(a, start, start + 0.02) > 1e-3 && peak(a, end - 0.02, end) > 1e-3,
              "%s: no speech at the segment's ends (%.3f, %.3f)", name, start, end);
        ts_audio_free(a);
        rows++;
    }
    fclose(f);
    CHECK(rows == 6, "segments.tsv: %d rows, not 6", rows);
}

int main(int argc, char **argv) {
    tu_args(argc, argv);
    if (system("{ command -v espeak-ng && command -v flite && command -v sox; } >/dev/null 2>&1") != 0)
        tu_skip("espeak-ng, flite or sox is not installed (apt-get install espeak-ng flite sox)");
    double t0 = tu_now();
    int rc = system("bash '" TS_SOURCE_DIR "/tools/make_spoken_digits.sh' '" OUT "'");
    printf("test_spoken_digits: make_spoken_digits.sh took %.1f s\n", tu_now() - t0);
    CHECK(rc == 0, "tools/make_spoken_digits.sh " OUT " failed (exit %d)", rc);
    RUN(test_digits);
    RUN(test_keywords_and_phrases);
    RUN(test_vad_segments);
    return tu_finish("test_spoken_digits");
}
