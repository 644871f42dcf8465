// A sound played in a loop (the ringtone, the ringback): at each end of stream the pipeline goes back to the start.
#include <gst/gst.h>

/// Empties the pipeline's bus; at an end of stream it seeks back to the start (or, where the stream cannot seek,
/// plays it again from READY). 1 when it looped, -1 at an error (its message into `*error`, malloc'd, when NULL
/// before), else 0.
static inline int parley_gst_loop_at_end(GstElement *pipeline, char **error) {
    GstBus *bus = gst_element_get_bus(pipeline);
    int outcome = 0;
    GstMessage *message;
    while ((message = gst_bus_pop(bus))) {
        if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_EOS && outcome == 0) {
            if (!gst_element_seek_simple(pipeline, GST_FORMAT_TIME, GST_SEEK_FLAG_FLUSH, 0)) {
                gst_element_set_state(pipeline, GST_STATE_READY);
                gst_element_set_state(pipeline, GST_STATE_PLAYING);
            }
            outcome = 1;
        } else if (GST_MESSAGE_TYPE(message) == GST_MESSAGE_ERROR) {
            GError *failure = NULL;
            gst_message_parse_error(message, &failure, NULL);
            if (error && !*error) *error = g_strdup(failure ? failure->message : "error");
            if (failure) g_error_free(failure);
            outcome = -1;
        }
        gst_message_unref(message);
    }
    gst_object_unref(bus);
    return outcome;
}
