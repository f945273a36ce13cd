/*
 * assets.h - the report page's inline style sheet and script. The page's Content-Security-Policy
 * allows exactly these two by their SHA-256 hashes, so they are fixed text: nothing from the
 * trace is ever written into them (the data the script reads is a separate JSON block).
 */
#ifndef AICPROF_REPORT_ASSETS_H
#define AICPROF_REPORT_ASSETS_H

extern const char report_css[];
extern const char report_js[];

#endif
