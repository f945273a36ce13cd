/*
 * cuptimux.h - the CUPTI multiplexer: aicprof and one other CUPTI tool (torch.profiler's Kineto,
 * a user's own tool) share the process's one CUPTI subscription and one set of activity buffer
 * callbacks, each seeing what it would see alone. See cuptimux.c for how.
 */
#ifndef AICPROF_CUPTIMUX_H
#define AICPROF_CUPTIMUX_H

#include <cupti.h>
#include <stdint.h>

/*
 * Resolves the real CUPTI entry points from handle (a dlopen handle of libcupti; NULL: find and
 * open it as cupti.c does). Returns 1 when multiplexing is on, 0 when it is off (AICPROF_MUX=0,
 * or a CUPTI this build cannot read: one "aicprof:" line; then the other tool's cuptiSubscribe
 * makes aicprof yield, as before), -1 when CUPTI cannot be loaded. Idempotent and thread-safe:
 * the first call decides.
 */
int cuptimux_init(void *handle);

/*
 * aicprof's own entry points, with the contracts of the CUPTI functions of the same names; the
 * handle they return is virtual. cupti.c points its p_cupti* at these when cuptimux_init
 * returned 1.
 */
CUptiResult cuptimux_own_subscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *ud);
CUptiResult cuptimux_own_unsubscribe(CUpti_SubscriberHandle s);
CUptiResult cuptimux_own_enable_callback(uint32_t enable, CUpti_SubscriberHandle s,
                                         CUpti_CallbackDomain d, CUpti_CallbackId cbid);
CUptiResult cuptimux_own_register_callbacks(CUpti_BuffersCallbackRequestFunc req,
                                            CUpti_BuffersCallbackCompleteFunc done);
CUptiResult cuptimux_own_activity_enable(CUpti_ActivityKind k);
CUptiResult cuptimux_own_activity_disable(CUpti_ActivityKind k);
CUptiResult cuptimux_own_flush_all(uint32_t flag);

/*
 * aicprof is done with CUPTI for good (its recording window closed, AICPROF_FINALIZE): when the
 * other side is neither subscribed nor has an activity kind on, aicprof's side is dropped and
 * CUPTI finalized (cuptiFinalize: detached from the process, which turning callbacks and kinds
 * off does not do), and the multiplexer forgets the real subscription, kinds and buffer
 * callbacks, so that the other side's next call attaches CUPTI again (CUPTI starts lazily).
 * Call it from a CUPTI driver API exit callback, CUPTI's rule for cuptiFinalize. Returns 1 when
 * CUPTI was finalized, 0 when the other side still uses it (nothing changed).
 */
int cuptimux_own_finalize(void);

/* Which side a figure is about. */
enum { MUX_OWN = 0, MUX_OTHER = 1 };

/*
 * Records handed to side `who` so far (delivered) and records of its enabled kinds it lost
 * because it had no buffer callbacks or its bufferRequested gave no buffer (dropped).
 */
void cuptimux_counts(int who, uint64_t *delivered, uint64_t *dropped);

/*
 * One line on how sharing went, for diagnosis: per side the records delivered (in all and per
 * activity kind, "kN:count"), those of the other side held back by its time gate ("filtered by
 * time"), dropped, and the buffers requested from and handed back to it; then the clock the
 * other side's records are in ("clock: other tool's callback, R ticks/ns" or "CUPTI's") and how
 * many of its records were of kinds whose times could not be moved. Exported (default
 * visibility) so that a test program can call it through dlsym, e.g. Python's ctypes. Returns a
 * static buffer, overwritten by the next call; "mux off (state N)" when not multiplexing.
 */
const char *aicprof_mux_report(void);

/* Whether multiplexing is on (cuptimux_init returned 1). */
int cuptimux_active(void);

#endif
