"""The admission webhook (AdmissionReview v1, ConversionReview) over HTTPS."""
