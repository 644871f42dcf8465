// The conference bridge's taps on a call's pipeline (docs/media.md, "The conference bridge"): an appsink that gives
// the call's decoded audio, an appsrc that takes what the bridge mixed for it. 16-bit mono samples either way.
#include <gst/app/gstappsink.h>
#include <gst/app/gstappsrc.h>

/// A pipeline's element by name, with a reference the caller drops with parley_bridge_unref (NULL when absent).
static inline GstElement *parley_bridge_element(GstElement *pipeline, const char *name) {
    return gst_bin_get_by_name(GST_BIN(pipeline), name);
}

static inline void parley_bridge_unref(GstElement *element) { gst_object_unref(element); }

/// Copies into `out` the samples the appsink holds now (never waiting), at most `capacity`; returns how many. What
/// does not fit is dropped (the appsink keeps at most a few buffers anyway).
static inline int parley_bridge_pull(GstElement *appsink, int16_t *out, int capacity) {
    int total = 0;
    GstSample *sample;
    while ((sample = gst_app_sink_try_pull_sample(GST_APP_SINK(appsink), 0)) != NULL) {
        GstBuffer *buffer = gst_sample_get_buffer(sample);
        GstMapInfo map;
        if (buffer && total < capacity && gst_buffer_map(buffer, &map, GST_MAP_READ)) {
            int count = (int)(map.size / sizeof(int16_t));
            if (count > capacity - total) count = capacity - total;
            memcpy(out + total, map.data, (size_t)count * sizeof(int16_t));
            total += count;
            gst_buffer_unmap(buffer, &map);
        }
        gst_sample_unref(sample);
    }
    return total;
}

/// The appsrc's pipeline running time now (ns), or -1 when it is not playing yet (its clock does not run).
static inline int64_t parley_bridge_running_time(GstElement *appsrc) {
    if (GST_STATE(appsrc) != GST_STATE_PLAYING) return -1;
    GstClockTime now = gst_element_get_current_running_time(appsrc);
    return GST_CLOCK_TIME_IS_VALID(now) ? (int64_t)now : -1;
}

/// Pushes `count` samples into the appsrc, stamped `pts` (running time, ns; -1: the appsrc stamps them as they come,
/// do-timestamp) lasting `duration` ns; 0 on success, 1 when the pipeline is not playing yet (nothing pushed: a
/// buffer timestamped before the clock runs would hold the mixer back for ever).
static inline int parley_bridge_push(GstElement *appsrc, const int16_t *samples, int count, int64_t pts, int64_t duration) {
    if (GST_STATE(appsrc) != GST_STATE_PLAYING) return 1;
    GstBuffer *buffer = gst_buffer_new_allocate(NULL, (gsize)count * sizeof(int16_t), NULL);
    if (!buffer) return -1;
    gst_buffer_fill(buffer, 0, samples, (gsize)count * sizeof(int16_t));
    if (pts >= 0) {
        GST_BUFFER_PTS(buffer) = (GstClockTime)pts;
        GST_BUFFER_DURATION(buffer) = (GstClockTime)duration;
    }
    return gst_app_src_push_buffer(GST_APP_SRC(appsrc), buffer) == GST_FLOW_OK ? 0 : -1;
}
