/*
 * tessera_apps.h — libtessera_apps: the applications built on tessera's core (libtessera,
 * tessera.h). One header per subject:
 *
 *   tessera_text.h    WordPiece, batches, pretraining text, text datasets, SQuAD
 *   tessera_bert.h    BERT: config, model, heads, model directories, training programs
 *   tessera_ocr.h     images and OCR
 *   tessera_speech.h  audio in, keyword spotting, voice activity
 *   tessera_tasks.h   the runs of the tessera command as library calls: resumable pretraining
 *                     and fine-tuning, held-out evaluation, stage balancing, answer decoding,
 *                     bag of words, epochs over rows
 *   tessera_plan.h    planning a run: device profiles, the cost model, the layout search
 *   tessera_serve.h   an inference server over HTTP with dynamic batching (tessera serve)
 *
 * What is promised. These functions follow tessera.h's conventions (status + ts_last_error, the
 * struct_size rule, ownership, threads), and libtessera_apps.so exports exactly what these
 * headers declare. What is not: the applications carry no ABI promise across minor versions —
 * a program built against this header is rebuilt with the library it runs on (the SONAME is
 * tied to the core's, but functions and structs here may change in a minor release, said in its
 * notes). They use only the core's public API (tessera.h and the helpers it declares for layers
 * built on it), so any application here could be written outside this tree.
 */
#ifndef TESSERA_APPS_H
#define TESSERA_APPS_H

#include "tessera.h"
#include "tessera_text.h"
#include "tessera_bert.h"
#include "tessera_ocr.h"
#include "tessera_speech.h"
#include "tessera_tasks.h"
#include "tessera_plan.h"
#include "tessera_serve.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The optional features this libtessera_apps was built with, space-separated in this order:
 * "images" (PNG and JPEG files: ts_image_read, ts_image_decode, ts_image_write_png), "audio"
 * (audio files and resampling: ts_audio_read, ts_audio_decode, ts_audio_write_wav) and "serve"
 * (tessera serve's HTTP server); "" for none. A feature built out keeps its functions, which fail
 * with TS_ERR_UNSUPPORTED naming the build option (-DTS_WITH_IMAGES, -DTS_WITH_AUDIO,
 * -DTS_WITH_SERVE). The core's own: ts_build_features (tessera_core.h). Static storage. */
TS_API const char *ts_apps_build_features(void);

/* A data folder of the installed or built tessera, for the models scripts/install-deps.sh fetches:
 * $TESSERA_DATA/sub when set, else the installed data directory's sub/ (<datadir>/tessera/sub)
 * when it holds `probe` (a file in it), else this build's source tree data/sub. Written into buf;
 * returns buf, or NULL with the error set (TS_ERR_ARG: a NULL argument, or a path longer than cap). */
TS_API const char *ts_data_dir(const char *sub, const char *probe, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* TESSERA_APPS_H */
