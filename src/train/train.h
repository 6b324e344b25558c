/*
 * train.h — names shared by the files of src/train: the state values of loss scaling
 * (loss_scale.c adds them, optimizer.c reads them) and of gradient accumulation.
 */
#ifndef TS_TRAIN_H
#define TS_TRAIN_H

#define TS_LOSS_SCALE_STATE "optimizer@LOSS_SCALE"               /* the scale; 0 before run 1 */
#define TS_LOSS_SCALE_CLEAN "optimizer@LOSS_SCALE_CLEAN_STEPS"   /* steps since it last changed */
#define TS_LOSS_SCALE_SKIPPED "optimizer@SKIPPED_STEPS"          /* steps skipped on overflow */
#define TS_MICRO_STEP "optimizer@MICRO_STEP"                     /* micro-batches summed so far */

#endif
